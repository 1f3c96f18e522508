package channel

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// The ApiVersions request a new connection starts with. v3 is the first
// flexible version and what Kafka's own inter-broker clients send; a
// broker that does not know it answers UNSUPPORTED_VERSION at v0.
const (
	apiVersionsKey     = 18
	fetchKey           = 1
	apiVersionsVersion = 3
	softwareName       = "qk-controller"
	softwareVersion    = "dev" // must match Kafka's pattern [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
)

// retainedBufCap: a write buffer that grew past this for one large
// request (an UpdateMetadata of a big cluster) is dropped afterwards
// rather than kept for the life of the connection.
const retainedBufCap = 1 << 20

// conn is one connection to a broker, after the ApiVersions exchange.
// Only the sender's goroutine uses it.
type conn struct {
	nc        net.Conn
	stopClose func() bool // unregisters the close-on-stop hook
	formatr   *kmsg.RequestFormatter
	timeout   time.Duration
	maxResp   int32
	corrID    int32
	buf       []byte
	versions  map[int16]kmsg.ApiVersionsResponseApiKey
	// reuse keeps rbuf, the last Fetch response's buffer, for the next
	// one (Config.ReuseResponseBuffer).
	reuse bool
	rbuf  []byte
	// reauthAt is when to replace the connection before the broker's
	// SASL session lifetime ends (zero: never).
	reauthAt time.Time
}

// dial connects to addr and learns the broker's API versions. ctx is the
// sender's: cancelling it ends the dial and closes the connection later
// too, which ends any read or write in progress.
func dial(ctx context.Context, cfg *Config, formatr *kmsg.RequestFormatter, addr string) (*conn, error) {
	dctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	defer cancel()
	nc, err := cfg.Dial(dctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	if cfg.TLS != nil {
		tcfg := cfg.TLS
		if tcfg.ServerName == "" {
			tcfg = tcfg.Clone()
			tcfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(nc, tcfg)
		if err := tc.HandshakeContext(dctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		nc = tc
	}
	c := &conn{
		nc:      nc,
		formatr: formatr,
		timeout: cfg.RequestTimeout,
		maxResp: cfg.MaxResponseBytes,
		reuse:   cfg.ReuseResponseBuffer,
	}
	c.stopClose = context.AfterFunc(ctx, func() { nc.Close() })
	if err := c.apiVersions(); err != nil {
		c.close()
		return nil, err
	}
	if cfg.SASL != nil {
		if err := c.authenticate(dctx, cfg.SASL, addr); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

// authenticate runs SASL on a new connection: SaslHandshake v1 for the
// mechanism, then SaslAuthenticate with each token of franz-go's client
// side of it until the mechanism is done.
func (c *conn) authenticate(ctx context.Context, m sasl.Mechanism, addr string) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Mechanism = m.Name()
	resp, err := c.roundTrip(hs)
	if err != nil {
		return fmt.Errorf("SASL: %w", err)
	}
	if err := kerr.ErrorForCode(resp.(*kmsg.SASLHandshakeResponse).ErrorCode); err != nil {
		return fmt.Errorf("SASL: SaslHandshake %s: %w (the broker enables %v)", m.Name(), err,
			resp.(*kmsg.SASLHandshakeResponse).SupportedMechanisms)
	}
	session, msg, err := m.Authenticate(ctx, addr)
	if err != nil {
		return fmt.Errorf("SASL %s: %w", m.Name(), err)
	}
	for range 8 {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.SASLAuthBytes = msg
		raw, err := c.roundTrip(req)
		if err != nil {
			return fmt.Errorf("SASL %s: %w", m.Name(), err)
		}
		ar := raw.(*kmsg.SASLAuthenticateResponse)
		if err := kerr.ErrorForCode(ar.ErrorCode); err != nil {
			if ar.ErrorMessage != nil {
				return fmt.Errorf("SASL %s: %w: %s", m.Name(), err, *ar.ErrorMessage)
			}
			return fmt.Errorf("SASL %s: %w", m.Name(), err)
		}
		done, next, err := session.Challenge(ar.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("SASL %s: %w", m.Name(), err)
		}
		if done {
			if life := time.Duration(ar.SessionLifetimeMillis) * time.Millisecond; life > 0 {
				// Kafka's clients re-authenticate at 85-95% of the
				// lifetime; this one reconnects at 90%.
				c.reauthAt = time.Now().Add(life * 9 / 10)
			}
			return nil
		}
		msg = next
	}
	return fmt.Errorf("SASL %s: the exchange did not end", m.Name())
}

func (c *conn) close() {
	c.stopClose()
	c.nc.Close()
}

// apiVersions asks the broker which versions of each API it serves. A
// broker that does not know our ApiVersions version answers
// UNSUPPORTED_VERSION with a v0 body; since Kafka 2.4 (KIP-511) that body
// names the highest ApiVersions version it does know, else we retry with
// v0, as kgo does. The version only goes down, so this ends.
func (c *conn) apiVersions() error {
	version := int16(apiVersionsVersion)
	for {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = version
		req.ClientSoftwareName = softwareName
		req.ClientSoftwareVersion = softwareVersion
		raw, err := c.exchange(req)
		if err != nil {
			return fmt.Errorf("ApiVersions v%d: %w", version, err)
		}
		if version > 0 && len(raw) >= 2 && int16(binary.BigEndian.Uint16(raw)) == kerr.UnsupportedVersion.Code {
			next := int16(0)
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = 0
			if resp.ReadFrom(raw) == nil {
				for _, k := range resp.ApiKeys {
					if k.ApiKey == apiVersionsKey && k.MaxVersion >= 0 && k.MaxVersion < version {
						next = k.MaxVersion
					}
				}
			}
			version = next
			continue
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = version
		if err := resp.ReadFrom(raw); err != nil {
			return fmt.Errorf("decode ApiVersions v%d response: %w", version, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return fmt.Errorf("ApiVersions v%d: %w", version, err)
		}
		c.versions = make(map[int16]kmsg.ApiVersionsResponseApiKey, len(resp.ApiKeys))
		for _, k := range resp.ApiKeys {
			c.versions[k.ApiKey] = k
		}
		return nil
	}
}

// roundTrip sends req at the highest version both the broker and kmsg
// support and decodes the answer. An error wrapping ErrUnsupportedAPI
// leaves the connection usable; any other means it must be closed.
func (c *conn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	key := req.Key()
	api := kmsg.NameForKey(key)
	served, ok := c.versions[key]
	if !ok {
		return nil, fmt.Errorf("%w: %s (key %d) not served by the broker", ErrUnsupportedAPI, api, key)
	}
	version := min(served.MaxVersion, req.MaxVersion())
	if version < served.MinVersion || version < 0 {
		return nil, fmt.Errorf("%w: %s: the broker serves v%d-%d, qk knows v0-%d",
			ErrUnsupportedAPI, api, served.MinVersion, served.MaxVersion, req.MaxVersion())
	}
	req.SetVersion(version)
	raw, err := c.exchange(req)
	if err != nil {
		return nil, fmt.Errorf("%s v%d: %w", api, version, err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	if err := resp.ReadFrom(raw); err != nil {
		return nil, fmt.Errorf("decode %s v%d response: %w", api, version, err)
	}
	return resp, nil
}

// exchange writes req and reads its response frame, returning the body
// after the response header.
//
//	request:  size int32 | api key int16 | version int16 | correlation id int32 |
//	          client id nullable string | [tagged fields, if flexible] | body
//	response: size int32 | correlation id int32 |
//	          [tagged fields, if flexible and not ApiVersions] | body
func (c *conn) exchange(req kmsg.Request) ([]byte, error) {
	c.corrID++
	corrID := c.corrID
	c.buf = c.formatr.AppendRequest(c.buf[:0], req, corrID)
	defer func() {
		if cap(c.buf) > retainedBufCap {
			c.buf = nil
		}
	}()
	if err := c.nc.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, err
	}
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}
	// Only Fetch responses share the buffer: a fetcher asks ListOffsets
	// while it still applies a fetch's records.
	frame, err := c.readFrame(c.reuse && req.Key() == fetchKey)
	if err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corrID {
		return nil, fmt.Errorf("response has correlation id %d, want %d", got, corrID)
	}
	body := frame[4:]
	// ApiVersions responses always have the v0 header, so that a client
	// can read the answer to a version the broker does not know.
	if req.IsFlexible() && req.Key() != apiVersionsKey {
		if body, err = skipTags(body); err != nil {
			return nil, fmt.Errorf("response header: %w", err)
		}
	}
	return body, nil
}

// readFrame reads one size-prefixed response. A size above maxResp is
// refused before anything is allocated, and the buffer grows with the
// bytes that actually arrive, so a peer that announces a big frame and
// sends nothing costs little.
//
// With reuse (Fetch responses of a Config.ReuseResponseBuffer
// connection) it reads into rbuf, grown to the largest such response.
func (c *conn) readFrame(reuse bool) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, fmt.Errorf("read response size: %w", err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > c.maxResp {
		return nil, fmt.Errorf("response size %d outside [4, %d]", n, c.maxResp)
	}
	if reuse && int(n) <= cap(c.rbuf) {
		b := c.rbuf[:n]
		if _, err := io.ReadFull(c.nc, b); err != nil {
			return nil, fmt.Errorf("read response: %w", err)
		}
		return b, nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, min(int(n), 64<<10)))
	got, err := buf.ReadFrom(io.LimitReader(c.nc, int64(n)))
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	if got < int64(n) {
		return nil, fmt.Errorf("read response: got %d of %d bytes: %w", got, n, io.ErrUnexpectedEOF)
	}
	if reuse {
		c.rbuf = buf.Bytes() // grown once to the largest response so far
	}
	return buf.Bytes(), nil
}

var errBadTags = errors.New("bad tagged fields")

// skipTags skips a tagged-field section (KIP-482): a count, then for
// each field its tag, size and data, all sizes unsigned varints.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errBadTags
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errBadTags
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return nil, errBadTags
		}
		b = b[k+int(size):]
	}
	return b, nil
}
