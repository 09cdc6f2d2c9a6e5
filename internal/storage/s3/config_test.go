package s3_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/ckpt/ckpt/internal/storage/s3"
	"github.com/ckpt/ckpt/storage"
)

var envKeys = []string{
	s3.EnvEndpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD", "AWS_REGION", "AWS_DEFAULT_REGION",
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		url  string
		env  map[string]string
		want s3.Config
	}{
		{
			url:  "s3://bucket",
			want: s3.Config{Endpoint: "s3.amazonaws.com", UseTLS: true, Bucket: "bucket"},
		},
		{
			url: "s3://ckpt-data/jobs/42",
			env: map[string]string{
				"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-west-1",
				"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "SECRET", "AWS_SESSION_TOKEN": "TOKEN",
				"MINIO_ROOT_USER": "ignored", "MINIO_ROOT_PASSWORD": "ignored",
			},
			want: s3.Config{
				Endpoint: "127.0.0.1:9000", Region: "eu-west-1", Bucket: "ckpt-data", Prefix: "jobs/42/",
				AccessKey: "AKID", SecretKey: "SECRET", SessionToken: "TOKEN",
			},
		},
		{
			url: "s3://b-1/p/",
			env: map[string]string{
				s3.EnvEndpoint: "https://minio.example:9000/", "AWS_ENDPOINT_URL": "http://ignored",
				"MINIO_ROOT_USER": "root", "MINIO_ROOT_PASSWORD": "rootpw", "AWS_DEFAULT_REGION": "us-east-1",
			},
			want: s3.Config{
				Endpoint: "minio.example:9000", UseTLS: true, Region: "us-east-1", Bucket: "b-1", Prefix: "p/",
				AccessKey: "root", SecretKey: "rootpw",
			},
		},
		{
			url:  "s3://b-2/x",
			env:  map[string]string{"AWS_ENDPOINT_URL_S3": "objects.local:8080", "AWS_ENDPOINT_URL": "http://ignored"},
			want: s3.Config{Endpoint: "objects.local:8080", UseTLS: true, Bucket: "b-2", Prefix: "x/"},
		},
	} {
		for _, k := range envKeys {
			t.Setenv(k, c.env[k])
		}
		got, err := s3.ParseURL(c.url)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", c.url, err)
			continue
		}
		c.want.PartSize, c.want.Concurrency, c.want.Connections = s3.DefaultPartSize, s3.DefaultConcurrency, s3.DefaultConnections
		if got != c.want {
			t.Errorf("ParseURL(%q) =\n%#v\nwant\n%#v", c.url, got, c.want)
		}
		if got.SecretKey != c.want.SecretKey || got.SessionToken != c.want.SessionToken {
			t.Errorf("ParseURL(%q): secrets differ", c.url) // %#v above hides them
		}
	}
	for _, bad := range []string{"", "bucket/prefix", "s3:/bucket", "s3:///prefix", "http://bucket/x", "s3://ab/x", "s3://bad..bucket/x", "s3://b-3//x"} {
		if cfg, err := s3.ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) = %+v, want an error", bad, cfg)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	good := s3.Config{Endpoint: "127.0.0.1:1", Bucket: "bucket"}
	for _, c := range []struct {
		what   string
		change func(*s3.Config)
	}{
		{"no endpoint", func(c *s3.Config) { c.Endpoint = "" }},
		{"ftp endpoint", func(c *s3.Config) { c.Endpoint = "ftp://host" }},
		{"endpoint with a path", func(c *s3.Config) { c.Endpoint = "http://host/path" }},
		{"no bucket", func(c *s3.Config) { c.Bucket = "" }},
		{"small parts", func(c *s3.Config) { c.PartSize = s3.MinPartSize - 1 }},
		{"huge parts", func(c *s3.Config) { c.PartSize = s3.MaxPartSize + 1 }},
		{"absolute prefix", func(c *s3.Config) { c.Prefix = "/abs" }},
		{"prefix with //", func(c *s3.Config) { c.Prefix = "a//b" }},
		{"prefix too long", func(c *s3.Config) { c.Prefix = strings.Repeat("p", s3.MaxKeyLen) }},
	} {
		cfg := good
		c.change(&cfg)
		_, err := s3.New(t.Context(), cfg)
		if err == nil || !storage.IsPermanent(err) {
			t.Errorf("%s: New = %v, want a permanent error", c.what, err)
		}
	}
}

func TestSecretDoesNotPrint(t *testing.T) {
	const secret = "hunter2-very-secret"
	cfg := s3.Config{Endpoint: "e", Bucket: "b", AccessKey: "AKID", SecretKey: secret, SessionToken: secret}
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
		fmt.Fprintf(&out, verb+"\n", cfg)
		fmt.Fprintf(&out, verb+"\n", cfg.SecretKey)
		fmt.Fprintf(&out, verb+"\n", &cfg)
	}
	fmt.Fprintln(&out, cfg, cfg.SecretKey)
	slog.New(slog.NewTextHandler(&out, nil)).Info("config", "cfg", cfg, "secret", cfg.SecretKey)
	slog.New(slog.NewJSONHandler(&out, nil)).Info("config", "cfg", cfg, "secret", cfg.SecretKey)
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out.Write(data)
	if strings.Contains(out.String(), secret) || strings.Contains(out.String(), fmt.Sprintf("%x", secret)) {
		t.Errorf("the secret shows in:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "[redacted]") || !strings.Contains(out.String(), "AKID") {
		t.Errorf("output lacks the redacted secret or the access key:\n%s", out.String())
	}
	if string(cfg.SecretKey) != secret {
		t.Errorf("string(SecretKey) = %q", string(cfg.SecretKey))
	}
	if got := fmt.Sprint(s3.Secret("")); got != "" {
		t.Errorf("empty secret prints as %q", got)
	}
}
