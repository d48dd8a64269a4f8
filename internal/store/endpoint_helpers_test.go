package store

import "context"

// ResolveS3Endpoint returns the endpoint a client built from c would send
// its requests to ("" for AWS's own), after the plain-HTTP rule. It sends
// nothing.
func ResolveS3Endpoint(ctx context.Context, c S3Config) (string, error) {
	_, endpoint, err := newS3Client(ctx, c)
	return endpoint, err
}
