package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the benchmark's CA and the broker's certificate, PEM files in
// dir as Kafka's PEM key stores take them.
type pki struct {
	caFile   string // the CA certificate: the clients' trust store and the broker's
	keystore string // the broker's PKCS#8 key, then its certificate and the CA's
}

// newPKI makes a P-256 CA and a broker certificate for 127.0.0.1 valid
// for a day, and writes them under dir. P-256 ECDSA is what Kafka's
// quick-start guides make and what a handshake signs cheaply; the cost
// the benchmark measures is the bulk cipher's, not the handshake's.
func newPKI(dir string) (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "qk bench CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "broker", Organization: []string{"qk"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("broker certificate: %w", err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	p := &pki{caFile: filepath.Join(dir, "ca.pem"), keystore: filepath.Join(dir, "broker-keystore.pem")}
	keystore := bytes.Join([][]byte{
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		caPEM,
	}, nil)
	if err := os.WriteFile(p.caFile, caPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.keystore, keystore, 0o600); err != nil {
		return nil, err
	}
	return p, nil
}
