//go:build !linux

package experiment

func processReadBytes(int) int64 { return -1 }

func cgroupReadOps(int) int64 { return -1 }

func deviceReads(int) (int64, int64) { return -1, -1 }
