package objstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The addressing each configuration gets: path style for an S3-compatible server's
// endpoint, AWS's virtual-hosted style on AWS, whatever the flag says when given.
func TestAddressing(t *testing.T) {
	// (s3test.Isolate, which this package's own tests cannot import.)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	for _, c := range []struct {
		cfg  Config
		path bool
	}{
		{Config{Endpoint: "https://minio.storage:9000"}, true},
		{Config{Endpoint: "http://127.0.0.1:7070"}, true},
		{Config{Endpoint: "https://s3.eu-west-1.amazonaws.com", Region: "eu-west-1"}, false},
		{Config{Region: "eu-west-1"}, false},
		{Config{Region: "eu-west-1", Addressing: AddressingPath}, true},
		{Config{Endpoint: "https://minio.storage:9000", Addressing: AddressingVirtualHost}, false},
	} {
		cl, err := New(context.Background(), c.cfg)
		if err != nil {
			t.Fatalf("%+v: %v", c.cfg, err)
		}
		if got := cl.s3.Options().UsePathStyle; got != c.path {
			t.Errorf("%+v: path style %v, want %v", c.cfg, got, c.path)
		}
	}
}
