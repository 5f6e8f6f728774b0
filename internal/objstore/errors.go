package objstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/innowarm/innowarm/internal/exitcode"
)

// The kinds of failure; errors from this package wrap one of them (test with errors.Is).
var (
	// ErrNotFound: no such object. It also matches fs.ErrNotExist.
	ErrNotFound = notFound{}
	ErrNoBucket = errors.New("no such bucket")
	// ErrDenied: the credentials were refused or do not allow the request.
	ErrDenied = errors.New("access denied")
	// ErrUnreachable: the endpoint could not be reached within the attempts (exit 1).
	ErrUnreachable = errors.New("cannot reach the endpoint")
	// ErrChecksum: the object's bytes do not match its stored checksum or size. Its
	// Damaged method tells a reader of the bytes (the manifest parser) that the object is
	// damaged, not that the read failed.
	ErrChecksum error = damaged("checksum mismatch")
	// ErrTLS: the endpoint's certificate was not accepted.
	ErrTLS = errors.New("TLS")
	// ErrNotS3: the endpoint does not answer as S3 does (a wrong URL, a web server, a proxy).
	ErrNotS3 = errors.New("not an S3 endpoint")
)

// opHead is the operation name of Stat's request, whose 404 says nothing more.
const opHead = "head object"

// damaged is the type of ErrChecksum (manifest.Damaged, without importing the format).
type damaged string

func (e damaged) Error() string { return string(e) }
func (damaged) Damaged() bool   { return true }

type notFound struct{}

func (notFound) Error() string        { return "no such object" }
func (notFound) Is(target error) bool { return target == fs.ErrNotExist }

// classify turns an SDK error into one line naming u and the kind of failure, wrapped for
// its exit code.
func (c *Client) classify(op string, u URL, err error) error {
	if err == nil {
		return nil
	}
	// The SDK's wrapping of a cancel says nothing more than the cancel itself.
	for _, cause := range []error{context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, cause) {
			return fmt.Errorf("%s: %s: %w", u, op, cause)
		}
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	code, message := "", ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code, message = ae.ErrorCode(), ae.ErrorMessage()
	}
	detail := code
	if message != "" {
		detail += ": " + message
	}
	usage := func(kind error, format string, args ...any) error {
		return exitcode.UsageError(fmt.Errorf("%s: %w: %s", u, kind, fmt.Sprintf(format, args...)))
	}
	switch {
	case code == "NoSuchBucket":
		return usage(ErrNoBucket, "bucket %q does not exist at %s", u.Bucket, c.endpoint)
	case code == "InvalidAccessKeyId" || code == "SignatureDoesNotMatch" || code == "ExpiredToken" ||
		code == "InvalidToken" || code == "TokenRefreshRequired" || code == "AuthorizationHeaderMalformed" ||
		code == "XAdminUserNotFound": // versitygw's answer (a 404) to an unknown access key
		return usage(ErrDenied, "%s: %s refused the credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or --s3-profile; AWS_REGION or --s3-region)", detail, c.endpoint)
	case code == "NoSuchKey" || (status == 404 && op == opHead):
		// (A HEAD answer has no body: Stat asks a listing what is missing.)
		return exitcode.UsageError(fmt.Errorf("%s: %w at %s", u, ErrNotFound, c.endpoint))
	case status == 404 && !strings.HasPrefix(code, "NoSuch"):
		return usage(ErrNotS3, "%s answered %s to %s without an S3 error: check --s3-endpoint (AWS_ENDPOINT_URL_S3) and the path style (--s3-path-style)", c.endpoint, strings.TrimSpace(fmt.Sprint(status, " ", message)), op)
	case status == 403 || code == "AccessDenied":
		if detail == "" {
			detail = "403 Forbidden"
		}
		return usage(ErrDenied, "%s to %s (innowarm needs s3:GetObject, s3:PutObject, s3:DeleteObject and s3:ListBucket: without ListBucket S3 answers 403 for a missing object)", detail, op)
	case status == 301 || code == "PermanentRedirect":
		return usage(ErrNoBucket, "bucket %q is in another region than %s (set --s3-region or AWS_REGION)", u.Bucket, c.region)
	case code == "InvalidBucketName":
		return usage(ErrNoBucket, "%s", detail)
	case code == "BadDigest" || code == "XAmzContentSHA256Mismatch" || code == "InvalidDigest":
		// The bytes were damaged on the way: worth another try, not the user's input.
		return fmt.Errorf("%s: %s: %w: the storage refused the upload (%s)", u, op, ErrChecksum, detail)
	}
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	switch {
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr):
		return usage(ErrTLS, "the certificate of %s was not accepted (%v): give its CA with --s3-ca or AWS_CA_BUNDLE", c.endpoint, innermost(err))
	case errors.As(err, &recordErr), strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		// (net/http reports a plain-http answer to TLS with that sentence, no error type.)
		return usage(ErrTLS, "%s does not speak TLS: use an http:// endpoint", c.endpoint)
	}
	var netErr net.Error
	var opErr *net.OpError
	if status == 0 && (errors.As(err, &opErr) || errors.As(err, &netErr)) {
		return fmt.Errorf("%s: %w %s after %d attempts: %v", u, ErrUnreachable, c.endpoint, MaxAttempts, innermost(err))
	}
	if code != "" {
		return fmt.Errorf("%s: %s: %s (HTTP %d from %s)", u, op, detail, status, c.endpoint)
	}
	return fmt.Errorf("%s: %s: %v", u, op, innermost(err))
}

func isNetError(err error) bool {
	var netErr net.Error
	return errors.As(err, &netErr)
}

// innermost is the most specific part of an SDK error chain: "dial tcp 127.0.0.1:9:
// connect: connection refused" rather than the operation, attempt and request wrapping it.
func innermost(err error) string {
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return opErr.Error()
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return certErr.Err.Error()
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, ", "); i >= 0 && strings.HasPrefix(msg, "operation error") {
		msg = msg[i+2:]
	}
	return msg
}
