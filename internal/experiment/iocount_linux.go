package experiment

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
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

// cgroupReadOps is the read operations issued so far by the block-I/O cgroup of process
// pid (0: this process) — the one a read cap such as scripts/capped-disk.sh applies to,
// or a standby's volume of its own (ioVolume) — summed over devices, or -1 when there is
// no such counter. It tells whether a server read less because the cap was spent by
// another process of the cgroup or because it issued fewer reads.
func cgroupReadOps(pid int) int64 {
	self := "/proc/self/cgroup"
	if pid > 0 {
		self = "/proc/" + strconv.Itoa(pid) + "/cgroup"
	}
	b, err := os.ReadFile(self)
	if err != nil {
		return -1
	}
	dir, v2 := ownIOCgroup(cgroupRoot, string(b))
	switch {
	case dir == "":
		return -1
	case v2:
		return sumReadOps(filepath.Join(dir, "io.stat"), true)
	}
	return sumReadOps(filepath.Join(dir, "blkio.throttle.io_serviced"), false)
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

// deviceReads is what the block device holding process pid's working directory (a
// server's data directory) has done, for every process: reads completed so far and I/Os
// in flight now (/sys/dev/block/MAJ:MIN/stat), or -1, -1. With the server's own counters
// it tells a stall of the device (its I/Os in flight, none completing) from one above it
// (the cgroup's cap holding the reads, or the server not issuing them).
func deviceReads(pid int) (reads, inFlight int64) {
	if pid <= 0 {
		return -1, -1
	}
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/cwd", &st); err != nil {
		return -1, -1
	}
	b, err := os.ReadFile(fmt.Sprintf("/sys/dev/block/%d:%d/stat", unix.Major(st.Dev), unix.Minor(st.Dev)))
	if err != nil {
		return -1, -1
	}
	return parseBlockStat(string(b))
}

// parseBlockStat reads a block device's stat file: field 1 is reads completed, field 9
// the I/Os in flight.
func parseBlockStat(s string) (reads, inFlight int64) {
	f := strings.Fields(s)
	if len(f) < 9 {
		return -1, -1
	}
	r, err1 := strconv.ParseInt(f[0], 10, 64)
	q, err2 := strconv.ParseInt(f[8], 10, 64)
	if err1 != nil || err2 != nil {
		return -1, -1
	}
	return r, q
}
