// Package jobtls is the optional TLS of a job's traffic for runs across
// machines: a certificate authority of the job's own, made
// at launch, and one certificate it signs, which every listener of the
// job (coordinator, relays, peers, staging servers) presents and every
// client presents back: mutual authentication, pinned to the job's CA, so
// that only a process the launcher gave the key to takes part. The job's
// token is still checked inside the TLS session.
//
// The key pair is made with the standard library alone (ECDSA P-256,
// crypto/x509) and written, readable by the job's user only, into a
// directory of the job's (Generate); the processes of the job load it
// from the paths the launcher hands them (Load). TLS 1.3 only.
package jobtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// ServerName is the name in the job's certificate that clients verify:
// every process of the job holds the same certificate, so the name says
// "of this job", not which host; the job's CA, made for this job alone,
// is what pins it.
const ServerName = "ckpt-job"

// Files are the paths of a job's TLS material.
type Files struct {
	CA   string // the job's CA certificate (PEM)
	Cert string // the certificate every process presents (PEM)
	Key  string // its private key (PEM, PKCS #8)
}

// Names of the files Generate writes in its directory.
const (
	CAFile   = "tls-ca.pem"
	CertFile = "tls-cert.pem"
	KeyFile  = "tls-key.pem"
)

// FilesIn names the files Generate writes in dir.
func FilesIn(dir string) Files {
	return Files{CA: filepath.Join(dir, CAFile), Cert: filepath.Join(dir, CertFile), Key: filepath.Join(dir, KeyFile)}
}

// fileMode is the mode of the files Generate writes: the key is the job's
// proof of membership.
const fileMode = 0o600

// Generate makes a new CA and a certificate it signs, valid for life
// from now, and writes them into dir (which must exist) with mode 0600.
func Generate(dir string, life time.Duration) (Files, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, fmt.Errorf("jobtls: %w", err)
	}
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "ckpt job CA"},
		NotBefore:             now.Add(-time.Minute), // clocks of the job's hosts differ a little
		NotAfter:              now.Add(life),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return Files{}, fmt.Errorf("jobtls: CA: %w", err)
	}
	ca, err = x509.ParseCertificate(caDER)
	if err != nil {
		return Files{}, fmt.Errorf("jobtls: CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Files{}, fmt.Errorf("jobtls: %w", err)
	}
	leaf := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: ServerName},
		DNSNames:     []string{ServerName},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(life),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return Files{}, fmt.Errorf("jobtls: certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Files{}, fmt.Errorf("jobtls: %w", err)
	}
	f := FilesIn(dir)
	for _, w := range []struct {
		path, kind string
		der        []byte
	}{{f.Key, "PRIVATE KEY", keyDER}, {f.Cert, "CERTIFICATE", leafDER}, {f.CA, "CERTIFICATE", caDER}} {
		if err := writePrivate(w.path, pem.EncodeToMemory(&pem.Block{Type: w.kind, Bytes: w.der})); err != nil {
			return Files{}, err
		}
	}
	return f, nil
}

// writePrivate writes b to a new file at path, mode 0600 whatever the
// umask, replacing a file of an earlier launch.
func writePrivate(path string, b []byte) error {
	os.Remove(path)
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return fmt.Errorf("jobtls: %w", err)
	}
	_, err = fh.Write(b)
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("jobtls: %w", err)
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail (Go 1.24+)
	}
	return n
}

// New makes a key pair in dir (Generate), creating dir private to the
// job's user, and loads it (Load).
func New(dir string, life time.Duration) (*Config, Files, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, Files{}, fmt.Errorf("jobtls: %w", err)
	}
	files, err := Generate(dir, life)
	if err != nil {
		return nil, files, err
	}
	c, err := Load(files)
	return c, files, err
}

// Config is what a process of the job speaks TLS with.
type Config struct {
	// Server is for listeners: it presents the job's certificate and
	// requires a client certificate the job's CA signed.
	Server *tls.Config
	// Client is for dialling: it presents the job's certificate and
	// accepts only a server certificate the job's CA signed.
	Client *tls.Config
}

// ErrIncomplete: some of the TLS files are named and some are not.
var ErrIncomplete = errors.New("jobtls: the CA, the certificate and the key go together")

// Load reads the job's TLS material. It returns nil (no TLS) if f names
// no file, and ErrIncomplete if it names some but not all.
func Load(f Files) (*Config, error) {
	switch n := count(f.CA, f.Cert, f.Key); n {
	case 0:
		return nil, nil
	case 3:
	default:
		return nil, ErrIncomplete
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("jobtls: %w", err)
	}
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("jobtls: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("jobtls: %s holds no certificate", f.CA)
	}
	return &Config{
		Server: &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{cert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
		},
		Client: &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{cert},
			RootCAs:      pool,
			ServerName:   ServerName,
		},
	}, nil
}

func count(s ...string) int {
	n := 0
	for _, x := range s {
		if x != "" {
			n++
		}
	}
	return n
}
