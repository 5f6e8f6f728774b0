//go:build !linux

package experiment

// ioVolume: only Linux has block-I/O cgroups; elsewhere a standby shares whatever disk
// the primary has.
type ioVolume struct{}

func standbyVolume() (*ioVolume, error) { return nil, nil }

func (v *ioVolume) hold(int) error   { return nil }
func (v *ioVolume) remove() error    { return nil }
func (v *ioVolume) describe() string { return "" }
