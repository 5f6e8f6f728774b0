package cli

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/innowarm/innowarm/internal/manifest/location"
	"github.com/innowarm/innowarm/internal/objstore"
)

// s3Flags say how to reach manifests in object storage (s3://BUCKET/PREFIX/NAME), on every
// command that takes a manifest location. Unset, each comes from the AWS SDK's environment
// and shared config files; in an option file they go in the [innowarm] group
// (s3-endpoint=...).
type s3Flags struct {
	cfg       objstore.Config
	pathStyle optionalBool
	st        *location.Store
}

func addS3Flags(cmd *cobra.Command) *s3Flags {
	f := &s3Flags{}
	fl := cmd.Flags()
	fl.StringVar(&f.cfg.Endpoint, "s3-endpoint", "", "S3-compatible endpoint for s3:// manifests, e.g. https://minio:9000 (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's endpoint_url, else AWS)")
	fl.StringVar(&f.cfg.Region, "s3-region", "", "region of the bucket (default: AWS_REGION, the profile's region; us-east-1 with a custom endpoint)")
	fl.StringVar(&f.cfg.Profile, "s3-profile", "", "profile of the shared config and credentials files (default: AWS_PROFILE, else default)")
	fl.StringVar(&f.cfg.CAFile, "s3-ca", "", "PEM file of the CA that signs the endpoint's TLS certificate (default: AWS_CA_BUNDLE, the system's CAs)")
	fl.Var(&f.pathStyle, "s3-path-style", "name the bucket in the path (https://host/BUCKET/KEY), as S3-compatible servers want (default: on with a custom endpoint; --s3-path-style=false forces virtual-hosted)")
	fl.Lookup("s3-path-style").NoOptDefVal = "true"
	return f
}

// store is the command's manifest store, made once the flags (and the option files'
// [innowarm] group) are read.
func (f *s3Flags) store() *location.Store {
	if f.st == nil {
		cfg := f.cfg
		if v := f.pathStyle.v; v != nil {
			cfg.Addressing = objstore.AddressingVirtualHost
			if *v {
				cfg.Addressing = objstore.AddressingPath
			}
		}
		f.st = &location.Store{S3: cfg}
	}
	return f.st
}

// optionalBool is a boolean flag that knows whether it was given at all (on the command line
// or in an option file): unset leaves the choice to the default.
type optionalBool struct{ v *bool }

func (o *optionalBool) String() string {
	if o.v == nil {
		return ""
	}
	return strconv.FormatBool(*o.v)
}

func (o *optionalBool) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	o.v = &b
	return nil
}

func (o *optionalBool) Type() string { return "bool" }
