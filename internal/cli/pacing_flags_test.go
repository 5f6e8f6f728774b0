package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/exitcode"
)

func TestPacingFlags(t *testing.T) {
	parse := func(args ...string) (*pacingFlags, error) {
		cmd := &cobra.Command{Use: "x"}
		f := addPacingFlags(cmd)
		return f, cmd.ParseFlags(args)
	}
	f, err := parse("--max-load", "Threads_running=25,Innodb_row_lock_current_waits=5", "--critical-load", "Threads_running=50", "--max-rate", "200MB/s", "--nice")
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.config(4)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.MaxLoad) != 2 || c.MaxLoad[0].Limit != 25 || len(c.Critical) != 1 || c.MaxRate != 200<<20 || !c.Nice || c.Workers != 4 {
		t.Errorf("config %+v", c)
	}
	f, _ = parse()
	if c, err := f.config(0); err != nil || c.Enabled() {
		t.Errorf("no flags: %+v, %v", c, err)
	}
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{[]string{"--max-load", "Threads_running=lots"}, `--max-load: "Threads_running=lots"`},
		{[]string{"--critical-load", "Threads_running="}, "--critical-load:"},
		{[]string{"--max-rate", "fast"}, "--max-rate:"},
		{[]string{"--max-rate", "100K/s"}, "at least 1MB/s"},
		{[]string{"--max-load", "Threads_running=50", "--critical-load", "threads_running=25"}, "not above --max-load"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f, err := parse(tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.config(4)
			if exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("%v: %v, want a usage error mentioning %q", tc.args, err, tc.mention)
			}
		})
	}
}
