package objstore

import (
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// InterceptHTTP makes c send every request through do, which may call next (the client's
// own HTTP client) or not: a test's way to act at a chosen moment of a request (cancel
// once the upload has begun, or once the storage has answered), with no timing involved.
func InterceptHTTP(c *Client, do func(req *http.Request, next aws.HTTPClient) (*http.Response, error)) {
	opts := c.s3.Options()
	opts.HTTPClient = interceptor{next: opts.HTTPClient, do: do}
	c.s3 = s3.New(opts)
}

type interceptor struct {
	next aws.HTTPClient
	do   func(*http.Request, aws.HTTPClient) (*http.Response, error)
}

func (i interceptor) Do(req *http.Request) (*http.Response, error) { return i.do(req, i.next) }
