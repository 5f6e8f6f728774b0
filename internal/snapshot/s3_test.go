package snapshot_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/innowarm/innowarm/internal/manifest/location"
	"github.com/innowarm/innowarm/internal/objstore"
	"github.com/innowarm/innowarm/internal/objstore/s3test"
	"github.com/innowarm/innowarm/internal/sandbox/sandboxtest"
)

// s3Env runs the CLI with the S3 server's keys, endpoint and region in the environment, as
// a sidecar gets them, and the sandbox server's connection flags.
func s3Run(srv *s3test.Server) sandboxtest.Run { return sandboxtest.Run{Env: srv.Env()} }

// TestSnapshotEveryToS3SurvivesKilledStorage is issue 20's target: snapshot --every writing
// to S3 while the storage (versitygw) is killed -9 at random moments, 10 times, and started
// again on the same directory. After each restart the manifest reads back valid (inspect
// --manifest s3://...), the sidecar keeps going, and its captures land again.
func TestSnapshotEveryToS3SurvivesKilledStorage(t *testing.T) {
	sb := sandboxtest.Server(t)
	conn := sandboxtest.Conn(t)
	createShop(t, conn, []string{"orders"})
	touchOrders(t, conn)
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "manifests")
	loc := "s3://manifests/prod/db1/hot.manifest.gz"

	cmd := exec.Command(sandboxtest.Binary(t), "snapshot", "--no-defaults", "-S", sb.Socket, "-u", "root", "-D", "shop",
		"-o", loc, "--every", "1s", "--keep", "2", "--json")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, srv.Env()...)
	var stdout, stderr sandboxtest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	}()
	waitCaptures := func(n int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for strings.Count(stdout.String(), `"entries"`) < n {
			select {
			case err := <-exited:
				t.Fatalf("the sidecar ended: %v; stderr %s", err, stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d captures written within 60 s, want %d; stderr %s", strings.Count(stdout.String(), `"entries"`), n, stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitCaptures(1)
	srv.SetEnv(t)
	st := &location.Store{}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for i := range 10 {
		// Anywhere in the 1 s cycle: during a capture's upload, rotation or copy, or between.
		time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
		srv.Kill()
		time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond) // the sidecar meets the dead endpoint
		srv.Restart(t)
		m, err := st.Load(t.Context(), loc)
		if err != nil || len(m.Entries) == 0 {
			t.Fatalf("kill %d: the manifest does not read back: %v", i+1, err)
		}
		for _, slot := range []string{"s3://manifests/prod/db1/hot.manifest.1.gz", "s3://manifests/prod/db1/hot.manifest.2.gz"} {
			if _, err := st.Load(t.Context(), slot); err != nil && !errors.Is(err, objstore.ErrNotFound) {
				t.Fatalf("kill %d: %s: %v", i+1, slot, err)
			}
		}
	}
	if c := inspectS3(t, srv, sb.Socket, loc); c.Entries == 0 || c.Coverage < 0.9 {
		t.Fatalf("inspect --manifest %s after the kills: %+v", loc, c)
	}
	// Captures land again after the last restart.
	waitCaptures(strings.Count(stdout.String(), `"entries"`) + 1)
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Fatalf("the sidecar stopped by SIGTERM: %v; stderr %s", err, stderr.String())
	}
	exited <- nil
	failed := strings.Count(stderr.String(), "capture failed")
	t.Logf("10 kills: %d captures written, %d failed (previous manifest kept); the manifest read back valid after each restart", strings.Count(stdout.String(), `"entries"`), failed)
	if strings.Contains(stderr.String(), "innowarm:") {
		t.Errorf("the sidecar reported a fatal error: %s", stderr.String())
	}
}

func inspectS3(t *testing.T, srv *s3test.Server, socket, loc string) coverage {
	t.Helper()
	r := sandboxtest.CLI(t, s3Run(srv), "inspect", "--no-defaults", "-S", socket, "-u", "root", "--manifest", loc, "--json")
	if r.Code != 0 {
		t.Fatalf("inspect --manifest %s: exit %d: %s", loc, r.Code, r.Stderr)
	}
	var c coverage
	sandboxtest.JSON(t, []byte(r.Stdout), &c)
	return c
}

// TestWarmFromS3 writes a snapshot to S3 with the --s3-* flags (no AWS environment but the
// keys), warms a cold server from it, and waits for its coverage: the same as from a file.
func TestWarmFromS3(t *testing.T) {
	sb := sandboxtest.Server(t)
	conn := sandboxtest.Conn(t)
	createShop(t, conn, []string{"orders", "items"})
	cold(t, sb)
	conn = sandboxtest.Reconnect(t)
	touchOrders(t, conn)
	srv := s3test.Start(t, s3test.Options{TLS: true})
	srv.Bucket(t, "manifests")
	run := sandboxtest.Run{Env: []string{"AWS_ACCESS_KEY_ID=" + s3test.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s3test.SecretKey}}
	s3 := []string{"--s3-endpoint", srv.Endpoint, "--s3-region", s3test.Region, "--s3-ca", srv.CAFile, "--s3-path-style"}
	loc := "s3://manifests/db1/shop.manifest"
	args := func(cmd string, more ...string) []string {
		return append(append([]string{cmd, "--no-defaults", "-S", sb.Socket, "-u", "root"}, s3...), more...)
	}
	r := sandboxtest.CLI(t, run, args("snapshot", "-D", "shop", "-o", loc)...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "→ "+loc) {
		t.Fatalf("snapshot -o %s: exit %d: %s%s", loc, r.Code, r.Stdout, r.Stderr)
	}
	// The same manifest as a file, for comparison.
	local := filepath.Join(sandboxtest.Dir(t), "shop.manifest")
	obj, err := os.ReadFile(srv.ObjectPath("manifests", "db1/shop.manifest"))
	if err != nil || !bytes.HasPrefix(obj, []byte("innowarm-manifest ")) {
		t.Fatalf("the stored object: %v %.30q", err, obj)
	}
	os.WriteFile(local, obj, 0o644)

	for _, from := range []string{loc, local} {
		cold(t, sb)
		r = sandboxtest.CLI(t, run, args("warm", "--from", from, "--json", "-q")...)
		if r.Code != 0 {
			t.Fatalf("warm --from %s: exit %d: %s", from, r.Code, r.Stderr)
		}
		var out struct {
			Result struct {
				Manifest struct {
					CoverageAfter float64 `json:"coverage_after"`
				} `json:"manifest"`
			} `json:"result"`
		}
		sandboxtest.JSON(t, []byte(r.Stdout), &out)
		if out.Result.Manifest.CoverageAfter < 0.99 {
			t.Errorf("warm --from %s: coverage after %.3f", from, out.Result.Manifest.CoverageAfter)
		}
		r = sandboxtest.CLI(t, run, args("inspect", "--manifest", from, "--wait-coverage", "95%", "--timeout", "30s")...)
		if r.Code != 0 || !strings.Contains(r.Stdout, "ready:") {
			t.Errorf("inspect --manifest %s --wait-coverage: exit %d: %s%s", from, r.Code, r.Stdout, r.Stderr)
		}
	}
	// The option file's [innowarm] group carries the S3 settings like any other flag.
	cnf := filepath.Join(sandboxtest.Dir(t), "s3.cnf")
	os.WriteFile(cnf, []byte("[innowarm]\ns3-endpoint="+srv.Endpoint+"\ns3-ca="+srv.CAFile+"\ns3-region="+s3test.Region+"\ns3-path-style\n"), 0o600)
	r = sandboxtest.CLI(t, run, "inspect", "--defaults-file", cnf, "-S", sb.Socket, "-u", "root", "--manifest", loc, "--json")
	if r.Code != 0 {
		t.Errorf("inspect with the S3 settings in an option file: exit %d: %s", r.Code, r.Stderr)
	}
}

// TestS3FailuresExitCodes: every failure is one line; a missing bucket or object, refused
// credentials or a foreign object are exit 2 (before the database is touched for a
// snapshot), a lost endpoint exit 1.
func TestS3FailuresExitCodes(t *testing.T) {
	sb := sandboxtest.Server(t)
	conn := sandboxtest.Conn(t)
	createShop(t, conn, []string{"orders"})
	srv := s3test.Start(t, s3test.Options{})
	srv.Bucket(t, "manifests")
	good := "s3://manifests/good.manifest"
	if r := sandboxtest.CLI(t, s3Run(srv), "snapshot", "--no-defaults", "-S", sb.Socket, "-u", "root", "-D", "shop", "-o", good); r.Code != 0 {
		t.Fatalf("snapshot: %s", r.Stderr)
	}
	if _, err := srv.Client(t).PutObject(t.Context(), putInput("manifests", "backup.sql", "CREATE TABLE precious (id INT);\n")); err != nil {
		t.Fatal(err)
	}
	wrongKey := append(srv.Env(), "AWS_SECRET_ACCESS_KEY=not-the-secret")
	noKeys := []string{"AWS_ENDPOINT_URL_S3=" + srv.Endpoint, "AWS_EC2_METADATA_DISABLED=true"}
	nowhere := []string{"AWS_ACCESS_KEY_ID=k", "AWS_SECRET_ACCESS_KEY=s", "AWS_ENDPOINT_URL_S3=http://127.0.0.1:9"}
	// No database server for the snapshots refused on their S3 target: they must stop first.
	noServer := []string{"--no-defaults", "-S", filepath.Join(t.TempDir(), "none.sock"), "-u", "root"}
	server := []string{"--no-defaults", "-S", sb.Socket, "-u", "root"}
	cases := []struct {
		name string
		env  []string
		args []string
		code int
		says string
	}{
		{"snapshot to a missing bucket", srv.Env(), append([]string{"snapshot", "-o", "s3://nobucket/x.manifest"}, noServer...), 2, `bucket "nobucket" does not exist`},
		{"snapshot over a foreign object", srv.Env(), append([]string{"snapshot", "-o", "s3://manifests/backup.sql"}, noServer...), 2, "is not an innowarm manifest; refusing to replace it"},
		{"snapshot with a wrong secret", wrongKey, append([]string{"snapshot", "-o", good}, noServer...), 2, "refused the credentials"},
		{"snapshot without a key", noKeys, append([]string{"snapshot", "-o", good}, noServer...), 2, "S3 credentials: none found"},
		{"snapshot to a bad URL", srv.Env(), append([]string{"snapshot", "-o", "s3://manifests/"}, noServer...), 2, "no object name"},
		{"snapshot to a lost endpoint", nowhere, append([]string{"snapshot", "-o", good}, noServer...), 1, "cannot reach the endpoint http://127.0.0.1:9"},
		{"warm from a missing object", srv.Env(), append([]string{"warm", "--from", "s3://manifests/none.manifest"}, server...), 2, "manifest s3://manifests/none.manifest: no such object"},
		{"warm from a missing bucket", srv.Env(), append([]string{"warm", "--from", "s3://nobucket/x"}, server...), 2, "does not exist"},
		{"warm from a foreign object", srv.Env(), append([]string{"warm", "--from", "s3://manifests/backup.sql"}, server...), 2, "not an innowarm manifest"},
		{"warm with a wrong secret", wrongKey, append([]string{"warm", "--from", good}, server...), 2, "refused the credentials"},
		{"warm from a lost endpoint", nowhere, append([]string{"warm", "--from", good}, server...), 1, "cannot reach the endpoint"},
		{"inspect from a lost endpoint", nowhere, append([]string{"inspect", "--manifest", good}, server...), 1, "cannot reach the endpoint"},
		{"wait on a missing object", srv.Env(), append([]string{"inspect", "--manifest", "s3://manifests/none", "--wait-coverage", "90%"}, server...), 2, "no such object"},
	}
	for _, c := range cases {
		r := sandboxtest.CLI(t, sandboxtest.Run{Env: c.env, Timeout: time.Minute}, c.args...)
		lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
		if r.Code != c.code || len(lines) != 1 || !strings.Contains(r.Stderr, c.says) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d, one line saying %q", c.name, r.Code, r.Stderr, c.code, c.says)
		}
	}
	obj, _ := os.ReadFile(srv.ObjectPath("manifests", "backup.sql"))
	if string(obj) != "CREATE TABLE precious (id INT);\n" {
		t.Errorf("the foreign object was changed: %q", obj)
	}
}

func putInput(bucket, key, body string) *s3.PutObjectInput {
	return &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)}
}
