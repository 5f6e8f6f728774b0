// Package objstore reaches objects in S3 and S3-compatible storage (MinIO, Ceph RGW,
// versitygw, Garage, ...) through the AWS SDK for Go v2, configured the way the SDK and
// Kubernetes operators configure it: credentials from the environment, the shared config and
// credentials files (a profile), web identity or the instance's role; an endpoint and a region
// from flags, the environment or the profile; path-style addressing for S3-compatible
// servers; a CA bundle for TLS.
//
// Every request is bounded (a few attempts with short back-offs, dial and read timeouts),
// every object read is checked against its stored checksum, and every failure is one line
// classified for the exit code: a missing bucket or object, refused credentials or a bad
// certificate are the user's input (exit 2); an endpoint that cannot be reached is a
// runtime failure (exit 1).
package objstore

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// Scheme starts every object location.
const Scheme = "s3://"

// URL names one object: s3://BUCKET/KEY.
type URL struct {
	Bucket string
	Key    string
}

func (u URL) String() string { return Scheme + u.Bucket + "/" + u.Key }

// WithKey is the object named key in the same bucket.
func (u URL) WithKey(key string) URL { return URL{Bucket: u.Bucket, Key: key} }

// IsURL reports whether s names an object rather than a local file: it has a scheme. Parse
// refuses schemes other than s3://.
func IsURL(s string) bool {
	i := strings.Index(s, "://")
	return i > 0 && !strings.ContainsAny(s[:i], "/.")
}

// MaxKeyBytes is the longest key S3 stores.
const MaxKeyBytes = 1024

// Parse reads s3://BUCKET/KEY. The key is the whole rest, slashes included (a "prefix" is
// just the start of a key).
func Parse(s string) (URL, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return URL{}, exitcode.UsageError(fmt.Errorf("%s: only %s locations are supported (s3://BUCKET/PREFIX/NAME)", s, Scheme))
	}
	bucket, key, _ := strings.Cut(rest, "/")
	switch {
	case bucket == "":
		return URL{}, exitcode.UsageError(fmt.Errorf("%s: no bucket: want s3://BUCKET/PREFIX/NAME", s))
	case key == "" || strings.HasSuffix(key, "/"):
		return URL{}, exitcode.UsageError(fmt.Errorf("%s: no object name after the bucket and prefix: want s3://BUCKET/PREFIX/NAME", s))
	case len(key) > MaxKeyBytes:
		return URL{}, exitcode.UsageError(fmt.Errorf("%s: the key is %d bytes, S3 allows %d", s, len(key), MaxKeyBytes))
	}
	// AWS keeps such a key as given, but S3-compatible servers store it under another name
	// (db1//x as db1/x, db1/../x as x) or refuse it: a writer and a reader could disagree.
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return URL{}, exitcode.UsageError(fmt.Errorf("%s: the key has an empty, \".\" or \"..\" part between slashes, which S3-compatible servers rename or refuse: write the key without it", s))
		}
	}
	return URL{Bucket: bucket, Key: key}, nil
}

// Addressing is how requests name the bucket.
type Addressing int

const (
	// AddressingAuto is path style with a custom endpoint (S3-compatible servers are
	// usually reached by one name, without a DNS name per bucket), virtual-hosted style on
	// AWS (also at an explicit *.amazonaws.com endpoint).
	AddressingAuto Addressing = iota
	// AddressingPath sends https://endpoint/BUCKET/KEY.
	AddressingPath
	// AddressingVirtualHost sends https://BUCKET.endpoint/KEY.
	AddressingVirtualHost
)

// Config says how to reach the storage. Every field is optional: an empty one is taken
// where the AWS SDK takes it (environment, then the shared config files' profile).
type Config struct {
	// Endpoint is the S3 API's URL (https://minio.example:9000); empty: AWS_ENDPOINT_URL_S3,
	// AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS's endpoint for the region.
	// http:// endpoints send requests unencrypted.
	Endpoint string
	// Region signs the requests; empty: AWS_REGION, AWS_DEFAULT_REGION, the profile's
	// region; us-east-1 with a custom endpoint (what S3-compatible servers expect unless
	// configured otherwise).
	Region string
	// Profile is the shared config profile; empty: AWS_PROFILE, else "default".
	Profile string
	// CAFile is a PEM bundle of the CAs the endpoint's certificate may chain to, instead of
	// the system's; empty: AWS_CA_BUNDLE or the profile's ca_bundle.
	CAFile     string
	Addressing Addressing
}

// Limits of every request: a lost endpoint fails within about MaxAttempts × DialTimeout.
const (
	MaxAttempts = 3
	MaxBackoff  = 2 * time.Second
	DialTimeout = 5 * time.Second
	// ReadTimeout is the longest the endpoint may stay silent once a request is sent.
	ReadTimeout = 60 * time.Second
)

// Client is a configured S3 client.
type Client struct {
	s3       *s3.Client
	endpoint string // for messages
	region   string
}

// New builds a client from c and the SDK's environment. It reads the shared config files
// but sends no request: credentials are looked up on the first one.
func New(ctx context.Context, c Config) (*Client, error) {
	httpClient := awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = DialTimeout }).
		WithTransportOptions(func(t *http.Transport) {
			t.TLSHandshakeTimeout = 10 * time.Second
			t.ResponseHeaderTimeout = ReadTimeout
		}).
		WithReadTimeout(ReadTimeout)
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(httpClient),
		// Failures are returned, one line each; the SDK's own log lines would be noise.
		config.WithLogger(logging.Nop{}),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = MaxAttempts
				o.MaxBackoff = MaxBackoff
			})
		}),
	}
	if c.Region != "" {
		opts = append(opts, config.WithRegion(c.Region))
	}
	if c.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(c.Profile))
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, exitcode.UsageError(fmt.Errorf("S3 CA bundle: %w", err))
		}
		// The SDK's own refusal names neither the file nor what is wrong with it.
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return nil, exitcode.UsageError(fmt.Errorf("S3 CA bundle %s: no PEM certificate in it (want -----BEGIN CERTIFICATE----- blocks)", c.CAFile))
		}
		opts = append(opts, config.WithCustomCABundle(bytes.NewReader(pem)))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, exitcode.UsageError(fmt.Errorf("S3 configuration: %w", err))
	}
	cl := &Client{}
	var custom bool
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		// The SDK has already taken AWS_ENDPOINT_URL(_S3) and the profile's endpoint_url.
		custom = o.BaseEndpoint != nil
		if custom {
			cl.endpoint = *o.BaseEndpoint
			if o.Region == "" {
				o.Region = "us-east-1"
			}
		}
		switch c.Addressing {
		case AddressingPath:
			o.UsePathStyle = true
		case AddressingVirtualHost:
			o.UsePathStyle = false
		default:
			// An endpoint of AWS's own (a FIPS or dual-stack one, say) keeps AWS's addressing.
			o.UsePathStyle = o.UsePathStyle || (custom && !strings.Contains(*o.BaseEndpoint, ".amazonaws.com"))
		}
		cl.region = o.Region
	})
	if cl.region == "" {
		return nil, exitcode.UsageError(errors.New("S3: no region: give --s3-region, or set AWS_REGION or the profile's region (a custom --s3-endpoint defaults to us-east-1)"))
	}
	if custom {
		if err := checkEndpoint(cl.endpoint); err != nil {
			return nil, err
		}
	} else {
		cl.endpoint = "AWS S3 in " + cl.region
	}
	if cfg.Credentials != nil {
		// Looked up now so that a host without any fails with one clear line rather
		// than inside the first request.
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			return nil, exitcode.UsageError(fmt.Errorf("S3 credentials: none found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE or --s3-profile with a shared credentials file, or run with a role): %s", firstLine(err.Error())))
		}
	}
	cl.s3 = client
	return cl, nil
}

func checkEndpoint(e string) error {
	if !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
		return exitcode.UsageError(fmt.Errorf("S3 endpoint %q: want a URL, http://HOST:PORT or https://HOST:PORT", e))
	}
	return nil
}

// Endpoint names where requests go, for messages.
func (c *Client) Endpoint() string { return c.endpoint }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
