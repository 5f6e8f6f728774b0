//go:build linux

package experiment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOwnIOCgroup(t *testing.T) {
	for _, c := range []struct {
		name, proc, dir string
		v2              bool
	}{
		{"v1 capped", "9:name=systemd:/\n7:blkio:/innowarm-capped-42\n0::/\n", "/r/blkio/innowarm-capped-42", false},
		{"v1 joint controllers", "5:cpu,blkio:/a/b\n", "/r/blkio/a/b", false},
		{"v1 root", "7:blkio:/\n0::/user.slice\n", "", false},
		{"v2 capped", "0::/innowarm-capped-42\n", "/r/innowarm-capped-42", true},
		{"v2 root", "0::/\n", "", false},
		{"nothing", "", "", false},
	} {
		dir, v2 := ownIOCgroup("/r", c.proc)
		if dir != c.dir || v2 != c.v2 {
			t.Errorf("%s: ownIOCgroup = %q, %v; want %q, %v", c.name, dir, v2, c.dir, c.v2)
		}
	}
}

// fakeCgroup makes a cgroup directory under root/blkio (v1) or root (v2) with rule files.
func fakeCgroup(t *testing.T, root, name string, v2 bool, rules map[string]string) {
	t.Helper()
	dir := filepath.Join(root, "blkio", name)
	if v2 {
		dir = filepath.Join(root, name)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, r := range rules {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(r), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestNewVolumeCopiesTheCap(t *testing.T) {
	root := t.TempDir()
	fakeCgroup(t, root, "capped", false, map[string]string{
		"blkio.throttle.read_iops_device": "8:0 1000\n", "blkio.throttle.read_bps_device": "8:0 67108864\n",
		"blkio.throttle.write_iops_device": "", "blkio.throttle.write_bps_device": "",
	})
	v, err := newVolume(root, "7:blkio:/capped\n", "standby")
	if err != nil || v == nil {
		t.Fatalf("newVolume = %v, %v", v, err)
	}
	if want := filepath.Join(root, "blkio", "capped-standby"); v.dir != want || v.v2 {
		t.Fatalf("volume %q (v2 %v), want %q", v.dir, v.v2, want)
	}
	got := ioRules(v.dir, false)
	if len(got) != 2 || got["blkio.throttle.read_iops_device"] != "8:0 1000" || got["blkio.throttle.read_bps_device"] != "8:0 67108864" {
		t.Fatalf("the volume's rules = %v, want the capped cgroup's two read rules", got)
	}
	if d := v.describe(); !strings.Contains(d, "read_iops_device 8:0 1000") || !strings.Contains(d, "capped-standby") {
		t.Errorf("describe = %q", d)
	}
	if err := v.hold(4242); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(v.dir, "cgroup.procs")); string(b) != "4242\n" {
		t.Errorf("cgroup.procs = %q, want the pid", b)
	}
}

func TestNewVolumeV2(t *testing.T) {
	root := t.TempDir()
	fakeCgroup(t, root, "capped", true, map[string]string{"io.max": "8:0 rbps=67108864 wbps=max riops=1000 wiops=max\n"})
	v, err := newVolume(root, "0::/capped\n", "standby")
	if err != nil || v == nil || !v.v2 {
		t.Fatalf("newVolume = %+v, %v", v, err)
	}
	if got := ioRules(v.dir, true)["io.max"]; got != "8:0 rbps=67108864 wbps=max riops=1000 wiops=max" {
		t.Errorf("the volume's io.max = %q", got)
	}
}

func TestNoVolumeWithoutACap(t *testing.T) {
	root := t.TempDir()
	fakeCgroup(t, root, "plain", false, map[string]string{"blkio.throttle.read_iops_device": ""})
	for _, proc := range []string{"7:blkio:/plain\n", "7:blkio:/\n", "0::/\n"} {
		v, err := newVolume(root, proc, "standby")
		if v != nil || err != nil {
			t.Errorf("%q: newVolume = %v, %v; want none: no cap to copy", proc, v, err)
		}
	}
	var none *ioVolume
	if none.hold(1) != nil || none.remove() != nil || none.describe() != "" {
		t.Error("a nil volume must do nothing")
	}
}

func TestParseBlockStat(t *testing.T) {
	r, q := parseBlockStat(" 1380602    29859 54404474   800856   235527   155896 30585960   354654        7   186952  1163477    23991       38 17242112     5133    29675     2833\n")
	if r != 1380602 || q != 7 {
		t.Errorf("reads %d, in flight %d; want 1380602, 7", r, q)
	}
	if r, q := parseBlockStat("1 2 3"); r != -1 || q != -1 {
		t.Errorf("a short stat line: %d, %d; want -1, -1", r, q)
	}
}
