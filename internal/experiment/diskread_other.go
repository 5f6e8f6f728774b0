//go:build !linux

package experiment

import "context"

func (r *recRun) measureDisk(context.Context) *DiskRead {
	return &DiskRead{Note: "not measured: reading past the OS cache is implemented on Linux only"}
}
