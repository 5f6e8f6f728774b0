package main

import (
	"fmt"
	"regexp"
	"strings"
)

// describeRe reads `git describe --tags --always --dirty`: an optional tag vX.Y.Z with an
// optional pre-release (-rc1), the commits since it and the commit (-5-gabc1234), and -dirty.
var describeRe = regexp.MustCompile(`^v?(\d+\.\d+\.\d+)(?:-([0-9A-Za-z.]+?))?(?:-(\d+)-g([0-9a-f]+))?$`)

// hashRe is describe's answer when no tag is reachable: the abbreviated commit.
var hashRe = regexp.MustCompile(`^[0-9a-f]{4,40}$`)

// packageVersionRe is what both dpkg and rpm accept as a version without a revision: it
// starts with a digit and holds no '-' (dpkg reads it as the revision, rpm forbids it).
var packageVersionRe = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~]*$`)

// PackageVersion turns git describe's answer into a version dpkg and rpm order the way the
// commits were made: a tag's X.Y.Z as is, a pre-release tag X.Y.Z-rc1 as X.Y.Z~rc1 (before
// X.Y.Z), commits after a tag as X.Y.Z+gitN.HASH (after X.Y.Z, and after one another by N),
// a tree without tags as 0.0.0+gitN.HASH with N the commits in the history (commits, which
// describe does not give then), and uncommitted changes as a trailing .dirty.
func PackageVersion(describe string, commits int) (string, error) {
	d, dirty := strings.CutSuffix(strings.TrimSpace(describe), "-dirty")
	var v string
	switch m := describeRe.FindStringSubmatch(d); {
	case m != nil:
		v = m[1]
		if m[2] != "" {
			v += "~" + m[2]
		}
		if m[3] != "" {
			v += fmt.Sprintf("+git%s.%s", m[3], m[4])
		}
		if dirty {
			if m[3] == "" {
				v += "+dirty"
			} else {
				v += ".dirty"
			}
		}
	default:
		if !hashRe.MatchString(d) {
			return "", fmt.Errorf("cannot make a package version of %q: expected git describe's vX.Y.Z[-rcN][-N-gHASH][-dirty] or a commit hash", describe)
		}
		if commits <= 0 {
			return "", fmt.Errorf("%q names no tag: the number of commits is needed to order the package versions", describe)
		}
		v = fmt.Sprintf("0.0.0+git%d.%s", commits, d)
		if dirty {
			v += ".dirty"
		}
	}
	if !packageVersionRe.MatchString(v) {
		return "", fmt.Errorf("package version %q (from %q) is not valid for dpkg and rpm", v, describe)
	}
	return v, nil
}
