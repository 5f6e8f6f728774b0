package exitcode

import (
	"errors"
	"fmt"
	"testing"
)

func TestBadValue(t *testing.T) {
	err := fmt.Errorf("sandbox up: %w", BadValue("PoolSize", "%s is too small", "1 MiB"))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "PoolSize" || Of(err) != Usage {
		t.Fatalf("%v: field error %+v, exit %d", err, fe, Of(err))
	}
	if got := err.Error(); got != "sandbox up: pool size 1 MiB is too small" {
		t.Errorf("message %q", got)
	}
	for field, want := range map[string]string{"PoolSize": "pool-size", "Rows": "rows", "MaxHot": "max-hot", "StatementTimeout": "statement-timeout"} {
		t.Run(field, func(t *testing.T) {
			if got := Words(field, "-"); got != want {
				t.Errorf("Words(%q) = %q, want %q", field, got, want)
			}
		})
	}
}
