package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/warm"
)

// A plan of thousands of tables lists the first of what it left out or found resident and
// sums up the rest in one line.
func TestLongListsAreSummedUp(t *testing.T) {
	var left []warm.LeftOut
	var resident []string
	for i := range 5000 {
		left = append(left, warm.LeftOut{Schema: "many", Table: fmt.Sprintf("t%d", i), Kind: warm.KindTablespace, Pages: 4, Reason: "over budget"})
		resident = append(resident, fmt.Sprintf("`many`.`r%d`", i))
	}
	var b bytes.Buffer
	printLeftOut(&b, left)
	printAlreadyResident(&b, resident)
	out := b.String()
	if n := strings.Count(out, "\n"); n != 2*listedInText+2 {
		t.Errorf("%d lines, want %d:\n%s", n, 2*listedInText+2, out)
	}
	for _, want := range []string{"left out: 4980 more (19920 pages; --json lists them all)", "already resident: 4980 more"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	b.Reset()
	printLeftOut(&b, left[:listedInText])
	if strings.Contains(b.String(), "more") || strings.Count(b.String(), "\n") != listedInText {
		t.Errorf("a list of %d: %s", listedInText, b.String())
	}
}
