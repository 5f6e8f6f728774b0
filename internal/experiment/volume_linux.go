package experiment

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ioVolume is a block-I/O cgroup with the same read cap as the one innowarm runs in
// (scripts/capped-disk.sh's rule), for a second server: a primary and its standby live on
// volumes of their own, so under a cap each must have its own, or the standby's load and
// the primary's traffic would share one disk's operations, which no real pair does.
type ioVolume struct {
	dir string // the cgroup's directory
	v2  bool
}

// cgroupRoot is where the cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// v1ThrottleFiles are the cgroup v1 blkio rules a volume copies.
var v1ThrottleFiles = []string{"blkio.throttle.read_iops_device", "blkio.throttle.read_bps_device",
	"blkio.throttle.write_iops_device", "blkio.throttle.write_bps_device"}

// ownIOCgroup is the directory of the block-I/O cgroup that the process whose
// /proc/PID/cgroup reads procCgroup is in, under root, and whether it is cgroup v2; ""
// when it is the root cgroup (no cap can apply) or none is named.
func ownIOCgroup(root, procCgroup string) (dir string, v2 bool) {
	sc := bufio.NewScanner(strings.NewReader(procCgroup))
	var unified string
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "blkio" {
				if parts[2] == "/" {
					return "", false
				}
				return filepath.Join(root, "blkio", parts[2]), false
			}
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
		}
	}
	if unified == "" || unified == "/" {
		return "", false
	}
	return filepath.Join(root, unified), true
}

// ioRules is the read cap of the cgroup in dir: its rule files' contents by name, none
// when it sets no rule.
func ioRules(dir string, v2 bool) map[string]string {
	names := v1ThrottleFiles
	if v2 {
		names = []string{"io.max"}
	}
	rules := map[string]string{}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if s := strings.TrimSpace(string(b)); s != "" {
			rules[name] = s
		}
	}
	return rules
}

// newVolume makes, beside the capped cgroup innowarm runs in, a cgroup named after it
// with suffix, holding the same rules; nil, nil when innowarm runs under no cap.
func newVolume(root, procCgroup, suffix string) (*ioVolume, error) {
	own, v2 := ownIOCgroup(root, procCgroup)
	if own == "" {
		return nil, nil
	}
	rules := ioRules(own, v2)
	if len(rules) == 0 {
		return nil, nil
	}
	v := &ioVolume{dir: own + "-" + suffix, v2: v2}
	if err := os.Mkdir(v.dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("a volume of its own: %w", err)
	}
	for name, rule := range rules {
		// The kernel takes one device's rule a write.
		for _, line := range strings.Split(rule, "\n") {
			if err := os.WriteFile(filepath.Join(v.dir, name), []byte(line+"\n"), 0o644); err != nil {
				_ = os.Remove(v.dir)
				return nil, fmt.Errorf("a volume of its own: rule %s: %w", name, err)
			}
		}
	}
	return v, nil
}

// standbyVolume is newVolume for the standby of the process's own cgroup.
func standbyVolume() (*ioVolume, error) {
	// Without /proc there is no cgroup to read, so no cap to copy: newVolume says none.
	b, _ := os.ReadFile("/proc/self/cgroup")
	return newVolume(cgroupRoot, string(b), "standby")
}

// hold moves process pid (and its threads) into the volume.
func (v *ioVolume) hold(pid int) error {
	if v == nil || pid <= 0 {
		return nil
	}
	if err := os.WriteFile(filepath.Join(v.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("move the server (pid %d) to its own volume: %w", pid, err)
	}
	return nil
}

// remove deletes the volume's cgroup, moving what still runs in it to the parent's.
func (v *ioVolume) remove() error {
	if v == nil {
		return nil
	}
	if b, err := os.ReadFile(filepath.Join(v.dir, "cgroup.procs")); err == nil {
		for _, pid := range strings.Fields(string(b)) {
			_ = os.WriteFile(filepath.Join(filepath.Dir(v.dir), "cgroup.procs"), []byte(pid+"\n"), 0o644)
		}
	}
	return os.Remove(v.dir)
}

// describe says what the volume is, for the report.
func (v *ioVolume) describe() string {
	if v == nil {
		return ""
	}
	rules := ioRules(v.dir, v.v2)
	var parts []string
	for _, name := range append(append([]string{}, v1ThrottleFiles...), "io.max") {
		if r, ok := rules[name]; ok {
			parts = append(parts, strings.TrimPrefix(name, "blkio.throttle.")+" "+strings.ReplaceAll(r, "\n", "; "))
		}
	}
	return "its own cgroup " + filepath.Base(v.dir) + ": " + strings.Join(parts, ", ")
}
