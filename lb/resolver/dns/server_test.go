package dns_test

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// dnsServer is a tiny authoritative DNS responder on 127.0.0.1 (UDP only):
// it answers A and AAAA questions for the names in records and NXDOMAIN for
// every other name. It is enough for Go's resolver, nothing more.
type dnsServer struct {
	conn    net.PacketConn
	records map[string][]netip.Addr // key: lower-case name with trailing dot

	mu      sync.Mutex
	queries []string // "name type" of each question, in arrival order
}

const (
	typeA    = 1
	typeAAAA = 28
)

// startDNSServer serves records until the test ends.
func startDNSServer(t *testing.T, records map[string][]netip.Addr) *dnsServer {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening on 127.0.0.1: %v", err)
	}
	s := &dnsServer{conn: conn, records: records}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.serve()
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	return s
}

// Addr returns the server's "127.0.0.1:port".
func (s *dnsServer) Addr() string { return s.conn.LocalAddr().String() }

func (s *dnsServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		if resp, err := s.answer(buf[:n]); err == nil {
			_, _ = s.conn.WriteTo(resp, from)
		}
	}
}

// answer builds the response to one query message (RFC 1035 section 4).
func (s *dnsServer) answer(q []byte) ([]byte, error) {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil, errors.New("want a header and exactly one question")
	}
	// The question's name: length-prefixed labels ending with a zero byte.
	var labels []string
	off := 12
	for {
		if off >= len(q) {
			return nil, errors.New("truncated name")
		}
		l := int(q[off])
		off++
		if l == 0 {
			break
		}
		if l > 63 || off+l > len(q) {
			return nil, errors.New("bad label")
		}
		labels = append(labels, string(q[off:off+l]))
		off += l
	}
	if off+4 > len(q) {
		return nil, errors.New("truncated question")
	}
	name := strings.ToLower(strings.Join(labels, ".")) + "."
	qtype := binary.BigEndian.Uint16(q[off : off+2])
	question := q[12 : off+4]

	s.mu.Lock()
	s.queries = append(s.queries, name+" "+map[uint16]string{typeA: "A", typeAAAA: "AAAA"}[qtype])
	s.mu.Unlock()

	addrs, known := s.records[name]
	var answers [][]byte
	for _, a := range addrs {
		if (qtype == typeA && a.Is4()) || (qtype == typeAAAA && a.Is6()) {
			answers = append(answers, a.AsSlice())
		}
	}
	const (
		flagResponse  = 1 << 15
		flagAuthority = 1 << 10
		flagRecursion = 1 << 8 // RD, copied from the query
		flagAvailable = 1 << 7 // RA
		rcodeNXDomain = 3
	)
	flags := uint16(flagResponse|flagAuthority|flagAvailable) | binary.BigEndian.Uint16(q[2:4])&flagRecursion
	if !known {
		flags |= rcodeNXDomain
	}
	resp := make([]byte, 12, 512)
	copy(resp[0:2], q[0:2]) // ID
	binary.BigEndian.PutUint16(resp[2:4], flags)
	binary.BigEndian.PutUint16(resp[4:6], 1)
	binary.BigEndian.PutUint16(resp[6:8], uint16(len(answers)))
	resp = append(resp, question...)
	for _, rdata := range answers {
		resp = append(resp, 0xc0, 12) // the name: a pointer to the question's
		resp = binary.BigEndian.AppendUint16(resp, qtype)
		resp = binary.BigEndian.AppendUint16(resp, 1) // class IN
		resp = binary.BigEndian.AppendUint32(resp, 60)
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(rdata)))
		resp = append(resp, rdata...)
	}
	return resp, nil
}

// Queries returns the questions received so far.
func (s *dnsServer) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}
