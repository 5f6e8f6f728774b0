package objstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/innowarm/innowarm/internal/exitcode"
	"github.com/innowarm/innowarm/internal/objstore"
	"github.com/innowarm/innowarm/internal/objstore/s3test"
)

// Keys with characters a URL gives a meaning to (a plus, which some servers decode as a
// space in x-amz-copy-source, an ampersand, a space, ...) are written, copied (how a
// manifest is put in place and rotated) and read back under their own name.
func TestKeysWithSpecialCharacters(t *testing.T) {
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "bkt")
	c := newClient(t, srv.Config())
	ctx := context.Background()
	for _, key := range []string{
		"db1/a+b.manifest", "db 1/hot manifest.gz", "db1/!$&'()*,;=:@.manifest", "db1/per%cent%2B.manifest",
		"db1/ünï cødé.manifest", "db1/q?x=1#frag.manifest", "db1/tilde~_-.manifest",
	} {
		u := objstore.URL{Bucket: "bkt", Key: key}
		in := put(t, c, u, []byte(key+"\n"))
		to := u.WithKey(key + ".1")
		if err := c.Copy(ctx, u, to, in.ETag); err != nil {
			t.Errorf("copy %q: %v", key, err)
			continue
		}
		if got, err := readAll(c, to); err != nil || string(got) != key+"\n" {
			t.Errorf("copy of %q read back %q, %v", key, got, err)
		}
	}
}

// A key with an empty, "." or ".." segment is refused: S3-compatible servers store it under
// another name (versitygw and a file system backend make db1//x db1/x and db1/../x x; MinIO
// refuses it) while AWS keeps it as given, so a writer and a reader could disagree; and a
// doubled slash is most often a prefix variable that ended in one.
func TestParseRefusesKeysServersRename(t *testing.T) {
	for _, s := range []string{
		"s3://b/db1//hot.manifest", "s3://b//hot.manifest", "s3://b/db1/./hot.manifest",
		"s3://b/db1/../hot.manifest", "s3://b/./hot.manifest", "s3://b/../hot.manifest",
	} {
		_, err := objstore.Parse(s)
		if err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), s) {
			t.Errorf("Parse(%q) = %v, want a usage error naming it", s, err)
		}
	}
	for _, s := range []string{"s3://b/db1/.hot.manifest", "s3://b/db1/..hot.manifest", "s3://b/db1/hot..manifest", "s3://b/a.b/c"} {
		if _, err := objstore.Parse(s); err != nil {
			t.Errorf("Parse(%q) = %v", s, err)
		}
	}
}
