package experiment

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// processReadBytes is the bytes a process has had read from storage for it
// (/proc/PID/io read_bytes; direct I/O included), or -1 when it cannot be read.
func processReadBytes(pid int) int64 {
	if pid <= 0 {
		return -1
	}
	p, err := procfs.NewProc(pid)
	if err != nil {
		return -1
	}
	io, err := p.IO()
	if err != nil {
		return -1
	}
	return int64(io.ReadBytes)
}

// cgroupReadOps is the read operations issued so far by this process's block-I/O cgroup
// (the one a read cap such as scripts/capped-disk.sh applies to, holding this process and
// the servers it started), summed over devices, or -1 when there is no such counter. It
// tells whether a server read less because the cap was spent by another process of the
// cgroup or because it issued fewer reads.
func cgroupReadOps() int64 {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[1] == "blkio" && parts[2] != "/":
			return sumReadOps(filepath.Join("/sys/fs/cgroup/blkio", parts[2], "blkio.throttle.io_serviced"), false)
		case parts[0] == "0" && parts[1] == "" && parts[2] != "/":
			return sumReadOps(filepath.Join("/sys/fs/cgroup", parts[2], "io.stat"), true)
		}
	}
	return -1
}

// sumReadOps sums the read operations of a cgroup v1 blkio.throttle.io_serviced file
// ("MAJ:MIN Read N" lines) or a v2 io.stat file ("MAJ:MIN rbytes=.. wbytes=.. rios=N ...").
func sumReadOps(path string, v2 bool) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return -1
	}
	var total int64
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if v2 {
			for _, f := range fields[min(1, len(fields)):] {
				if v, ok := strings.CutPrefix(f, "rios="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					total += n
				}
			}
			continue
		}
		if len(fields) == 3 && fields[1] == "Read" {
			n, _ := strconv.ParseInt(fields[2], 10, 64)
			total += n
		}
	}
	return total
}
