package warm

import (
	"golang.org/x/sys/unix"
)

// listReadWatch tells when the server's loader has read the page list file: it closes the
// file after reading it (inotify IN_CLOSE_NOWRITE), having set its status to "Loading"
// before it opened it. A load's end is then its "completed" status, even where that text is
// the one the chunk before it left: the status names its second only, and a chunk of pages
// that read-ahead had already brought in reads nothing, so neither the text nor the pages
// read told its end, and each such chunk waited 2 s to be believed (a --nice warm of 2,916
// pages took 34 s on an idle server instead of 4).
type listReadWatch struct{ fd int }

// watchListRead watches path; nil where inotify is not available (the caller falls back
// to the status and the pages read).
func watchListRead(path string) *listReadWatch {
	if path == "" {
		return nil
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_CLOSE_NOWRITE); err != nil {
		unix.Close(fd)
		return nil
	}
	return &listReadWatch{fd: fd}
}

// read reports whether the file was read and closed since the last call.
func (w *listReadWatch) read() bool {
	if w == nil {
		return false
	}
	var buf [4096]byte
	seen := false
	for {
		n, err := unix.Read(w.fd, buf[:])
		if err != nil || n <= 0 {
			return seen
		}
		seen = true
	}
}

func (w *listReadWatch) close() {
	if w != nil {
		unix.Close(w.fd)
	}
}
