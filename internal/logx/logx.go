// Package logx writes timestamped log lines to stderr. Results go to stdout; everything a
// human may want to follow while a command runs goes here.
package logx

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Logger prints lines like the 2017 mysql-warmup tool did: "2017-02-24 15:33:07 +0900: --- text".
type Logger struct {
	mu    sync.Mutex
	out   io.Writer
	quiet bool
	now   func() time.Time
}

// New returns a logger writing to w. A quiet logger drops Infof lines but keeps warnings.
func New(w io.Writer, quiet bool) *Logger {
	return &Logger{out: w, quiet: quiet, now: time.Now}
}

var std = New(os.Stderr, false)

// Default is the process-wide logger (stderr).
func Default() *Logger { return std }

// SetDefault replaces the process-wide logger; tests and the CLI use it to redirect output.
func SetDefault(l *Logger) { std = l }

func (l *Logger) line(prefix, format string, args ...any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.out, "%s: %s%s\n", l.now().Format("2006-01-02 15:04:05 -0700"), prefix, fmt.Sprintf(format, args...))
}

// Infof logs progress information.
func (l *Logger) Infof(format string, args ...any) {
	if l == nil || l.quiet {
		return
	}
	l.line("", format, args...)
}

// Warnf logs something the user should notice even in quiet mode.
func (l *Logger) Warnf(format string, args ...any) { l.line("WARNING: ", format, args...) }

// Writer is where the logger prints; progress bars share it so lines do not interleave badly.
func (l *Logger) Writer() io.Writer { return l.out }

// Quiet reports whether Infof lines are dropped.
func (l *Logger) Quiet() bool { return l.quiet }

// Infof logs on the default logger.
func Infof(format string, args ...any) { std.Infof(format, args...) }

// Warnf warns on the default logger.
func Warnf(format string, args ...any) { std.Warnf(format, args...) }
