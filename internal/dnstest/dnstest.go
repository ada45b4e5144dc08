// Package dnstest is a tiny authoritative DNS server on a loopback UDP
// port, for lbkit's tests: it answers A and AAAA questions for the names it
// is given and NXDOMAIN for every other name, and can be told to answer
// garbage or nothing at all, as a broken or unreachable server would. It is
// enough for Go's resolver (net.Resolver with PreferGo), nothing more.
package dnstest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// Mode is how the server answers.
type Mode int

const (
	// Answer answers every question from the records.
	Answer Mode = iota
	// Garbage answers every question with a reply whose address record
	// cannot be read.
	Garbage
	// Silent reads every question and never answers, as a server that is
	// down or unreachable would.
	Silent
)

// Server is one DNS server. Its methods are safe for concurrent use.
type Server struct {
	conn net.PacketConn
	done chan struct{} // closed when serve returns

	mu      sync.Mutex
	records map[string][]netip.Addr // key: lower-case name with a trailing dot
	mode    Mode
	queries []string // "name type" of each question, in arrival order
}

const (
	typeA    = 1
	typeAAAA = 28
)

// Start listens on a free UDP port of 127.0.0.1 and serves until Close.
func Start() (*Server, error) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("dnstest: listening on 127.0.0.1: %w", err)
	}
	s := &Server{conn: conn, done: make(chan struct{}), records: map[string][]netip.Addr{}}
	go func() {
		defer close(s.done)
		s.serve()
	}()
	return s, nil
}

// Close stops the server and waits for its goroutine to end.
func (s *Server) Close() {
	s.conn.Close()
	<-s.done
}

// Addr returns the server's "127.0.0.1:port".
func (s *Server) Addr() string { return s.conn.LocalAddr().String() }

// Set makes name (with or without its trailing dot, any case) resolve to
// addrs from the next question on. An empty addrs makes the name exist
// with no address: the answer is NOERROR with no record.
func (s *Server) Set(name string, addrs ...netip.Addr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[canonical(name)] = slices.Clone(addrs)
}

// Delete makes name unknown: the answer is NXDOMAIN.
func (s *Server) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, canonical(name))
}

// SetMode sets how the server answers from the next question on.
func (s *Server) SetMode(m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = m
}

// Queries returns the questions received so far, each as "name type" such
// as "a.test. AAAA".
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.queries)
}

func canonical(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, ".")) + "."
}

func (s *Server) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		if resp, err := s.answer(buf[:n]); err == nil && resp != nil {
			_, _ = s.conn.WriteTo(resp, from)
		}
	}
}

// answer builds the response to one query message (RFC 1035 section 4);
// nil means no response.
func (s *Server) answer(q []byte) ([]byte, error) {
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
	addrs, known := s.records[name]
	mode := s.mode
	s.mu.Unlock()

	if mode == Silent {
		return nil, nil
	}
	var answers [][]byte
	for _, a := range addrs {
		if (qtype == typeA && a.Is4()) || (qtype == typeAAAA && a.Is6()) {
			answers = append(answers, a.AsSlice())
		}
	}
	if mode == Garbage {
		// A well-formed header and question (a client ignores a reply it
		// cannot match to its question, as a possible forgery, and waits
		// on), then an address record of 3 bytes, which no client can
		// read.
		known, answers = true, [][]byte{{0xde, 0xad, 0xbe}}
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
		resp = binary.BigEndian.AppendUint32(resp, 1) // TTL: 1 s, which Go's resolver cannot show
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(rdata)))
		resp = append(resp, rdata...)
	}
	return resp, nil
}
