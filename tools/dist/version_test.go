package main

import "testing"

func TestPackageVersion(t *testing.T) {
	cases := []struct {
		describe string
		commits  int
		want     string
	}{
		{"v1.2.3", 0, "1.2.3"},
		{"1.2.3", 0, "1.2.3"},
		{"v1.2.3-dirty", 0, "1.2.3+dirty"},
		{"v1.2.3-5-gabc1234", 0, "1.2.3+git5.abc1234"},
		{"v1.2.3-5-gabc1234-dirty", 0, "1.2.3+git5.abc1234.dirty"},
		{"v1.2.3-rc1", 0, "1.2.3~rc1"},
		{"v1.2.3-rc.1-12-g0123abcd", 0, "1.2.3~rc.1+git12.0123abcd"},
		{"49ee0e1", 98, "0.0.0+git98.49ee0e1"},
		{"49ee0e1-dirty", 98, "0.0.0+git98.49ee0e1.dirty"},
		{"  v0.1.0\n", 0, "0.1.0"},
	}
	for _, c := range cases {
		got, err := PackageVersion(c.describe, c.commits)
		if err != nil || got != c.want {
			t.Errorf("PackageVersion(%q, %d) = %q, %v; want %q", c.describe, c.commits, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "dev", "release-2026", "v1.2", "49ee0e1 extra"} {
		if got, err := PackageVersion(bad, 5); err == nil {
			t.Errorf("PackageVersion(%q) = %q; want an error", bad, got)
		}
	}
	// Without a tag the history's length orders the packages: it must be given.
	if got, err := PackageVersion("49ee0e1", 0); err == nil {
		t.Errorf("PackageVersion without a tag or a commit count = %q; want an error", got)
	}
}
