package sandboxtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// ThrottleReads caps the disk read rate of process pid (a sandbox server) with the blkio
// cgroup, so that a test can catch a long operation (a native load) in the middle. It
// returns what lifts the cap. Needs root and cgroup v1 blkio or cgroup v2 io.
func ThrottleReads(t testing.TB, pid int, dir string, bytesPerSecond int64) func() {
	t.Helper()
	dev, err := wholeDisk(dir)
	if err != nil {
		t.Fatalf("throttle reads: %v", err)
	}
	name := fmt.Sprintf("innowarm-test-%d-%d", os.Getpid(), pid)
	v1 := "/sys/fs/cgroup/blkio"
	if st, err := os.Stat(filepath.Join(v1, "blkio.throttle.read_bps_device")); err == nil && !st.IsDir() {
		cg := filepath.Join(v1, name)
		must := func(err error) {
			if err != nil {
				t.Fatalf("throttle reads (cgroup v1 blkio, needs root): %v", err)
			}
		}
		must(os.MkdirAll(cg, 0o755))
		must(os.WriteFile(filepath.Join(cg, "blkio.throttle.read_bps_device"), []byte(fmt.Sprintf("%s %d", dev, bytesPerSecond)), 0))
		must(os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0))
		return func() {
			_ = os.WriteFile(filepath.Join(v1, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
			_ = os.Remove(cg)
		}
	}
	t.Fatalf("throttle reads: no cgroup v1 blkio controller at %s", v1)
	return nil
}

// wholeDisk is "major:minor" of the disk (not the partition) that holds dir.
func wholeDisk(dir string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return "", err
	}
	major, minor := unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)) //nolint:unconvert // Dev is not uint64 on every platform
	sys := fmt.Sprintf("/sys/dev/block/%d:%d", major, minor)
	if _, err := os.Stat(filepath.Join(sys, "partition")); err == nil {
		b, err := os.ReadFile(filepath.Join(sys, "..", "dev"))
		if err != nil {
			return "", err
		}
		return strings.TrimSpace(string(b)), nil
	}
	return fmt.Sprintf("%d:%d", major, minor), nil
}
