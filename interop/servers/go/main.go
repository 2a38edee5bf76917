// Command interop-server is the Go net/http server of courier's interop suite.
//
// It serves the endpoints of interop/README.md's contract over HTTP/1.1,
// h2c (prior knowledge) and TLS with ALPN h2 + http/1.1 with the standard
// library alone, so that the suite tests Go's own HTTP stacks, and over
// HTTP/3 (--h3, UDP) with quic-go's http3 server (h3.go), the same handler.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var docroot string

func main() {
	h1 := flag.Int("h1", 0, "HTTP/1.1 port (0: none)")
	h2c := flag.Int("h2c", 0, "h2c prior-knowledge port (0: none)")
	tlsPort := flag.Int("tls", 0, "TLS port with ALPN h2 and http/1.1 (0: none)")
	h3Port := flag.Int("h3", 0, "HTTP/3 UDP port, quic-go (0: none)")
	cert := flag.String("cert", "", "certificate PEM for --tls")
	key := flag.String("key", "", "private key PEM for --tls")
	flag.StringVar(&docroot, "docroot", ".", "directory served under /static/")
	profile := flag.String("profile", "default", "default|tight")
	flag.Parse()
	if *profile != "default" && *profile != "tight" {
		fail(fmt.Errorf("unknown profile %q", *profile))
	}
	if (*tlsPort != 0 || *h3Port != 0) && (*cert == "" || *key == "") {
		fail(errors.New("--tls and --h3 need --cert and --key"))
	}

	var servers []*http.Server
	start := func(port int, protos http.Protocols, tls bool) {
		srv := newServer(*profile, protos)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			fail(err)
		}
		servers = append(servers, srv)
		go func() {
			var err error
			if tls {
				err = srv.ServeTLS(ln, *cert, *key)
			} else {
				err = srv.Serve(ln)
			}
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				fail(err)
			}
		}()
	}
	if *h1 != 0 {
		var p http.Protocols
		p.SetHTTP1(true)
		start(*h1, p, false)
	}
	if *h2c != 0 {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		start(*h2c, p, false)
	}
	if *tlsPort != 0 {
		var p http.Protocols
		p.SetHTTP1(true)
		p.SetHTTP2(true)
		start(*tlsPort, p, true)
	}

	var h3 interface{ Close() error }
	if *h3Port != 0 {
		srv, err := startH3(*h3Port, *cert, *key, *profile)
		if err != nil {
			fail(err)
		}
		h3 = srv
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Println("ready")
	<-sig
	// Close, not Shutdown: the harness wants the port back at once.
	for _, s := range servers {
		s.Close()
	}
	if h3 != nil {
		h3.Close()
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "interop-server:", err)
	os.Exit(1)
}

// newServer applies the profile. Go has no per-connection request limit, so
// "tight" only shortens the idle and header timeouts (they apply to h2 too).
func newServer(profile string, protos http.Protocols) *http.Server {
	srv := &http.Server{Handler: http.HandlerFunc(route), Protocols: &protos}
	if profile == "tight" {
		srv.IdleTimeout = 2 * time.Second
		srv.ReadHeaderTimeout = 3 * time.Second
	}
	return srv
}

func route(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	get := r.Method == http.MethodGet
	switch {
	case strings.HasPrefix(p, "/static/") && (get || r.Method == http.MethodHead):
		static(w, r, strings.TrimPrefix(p, "/static/"))
	case p == "/echo" && (r.Method == http.MethodPost || r.Method == http.MethodPut):
		echo(w, r)
	case strings.HasPrefix(p, "/status/") && get:
		status(w, strings.TrimPrefix(p, "/status/"))
	case p == "/trailers" && get:
		trailers(w)
	case p == "/early-hints" && get:
		w.Header().Set("Link", "</static/small.txt>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "ok")
	case p == "/gzip" && get:
		gzipped(w, r)
	case strings.HasPrefix(p, "/redirect/") && get:
		redirect(w, strings.TrimPrefix(p, "/redirect/"))
	case strings.HasPrefix(p, "/delay/") && get:
		delay(w, r, strings.TrimPrefix(p, "/delay/"))
	default:
		http.NotFound(w, r)
	}
}

func static(w http.ResponseWriter, r *http.Request, name string) {
	if name == "" || strings.Contains(name, "..") {
		http.NotFound(w, r)
		return
	}
	f, err := os.Open(filepath.Join(docroot, filepath.FromSlash(name)))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		http.NotFound(w, r)
		return
	}
	// ServeContent sets Content-Length and omits the body for HEAD.
	http.ServeContent(w, r, st.Name(), st.ModTime(), f)
}

// echo copies the request body back as it arrives. Full duplex lets an
// HTTP/1.1 handler keep reading after the response head is written.
func echo(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	_ = rc.EnableFullDuplex()
	w.Header().Set("Content-Type", "application/octet-stream")
	buf := make([]byte, 32*1024)
	// The first read comes before the head: it is what makes Go answer
	// `Expect: 100-continue`; once a final head is out, Go never sends 100.
	n, err := r.Body.Read(buf)
	w.WriteHeader(http.StatusOK)
	for {
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			_ = rc.Flush()
		}
		if err != nil {
			return
		}
		n, err = r.Body.Read(buf)
	}
}

func status(w http.ResponseWriter, arg string) {
	code, err := strconv.Atoi(arg)
	if err != nil || code < 200 || code > 599 {
		http.Error(w, "bad status", http.StatusNotFound)
		return
	}
	w.WriteHeader(code)
}

func trailers(w http.ResponseWriter) {
	body := make([]byte, 64*1024)
	for i := range body {
		body[i] = byte(i % 251)
	}
	sum := sha256.Sum256(body)
	w.Header().Set("Trailer", "X-Checksum")
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	w.Header().Set("X-Checksum", hex.EncodeToString(sum[:]))
}

func gzipped(w http.ResponseWriter, r *http.Request) {
	text, err := os.ReadFile(filepath.Join(docroot, "text.txt"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Vary", "Accept-Encoding")
	if !strings.Contains(strings.ToLower(r.Header.Get("Accept-Encoding")), "gzip") {
		w.Header().Set("Content-Length", strconv.Itoa(len(text)))
		w.Write(text)
		return
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(text)
	zw.Close()
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.Write(buf.Bytes())
}

func redirect(w http.ResponseWriter, arg string) {
	n, err := strconv.Atoi(arg)
	if err != nil || n < 0 {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	if n == 0 {
		io.WriteString(w, "done")
		return
	}
	w.Header().Set("Location", "/redirect/"+strconv.Itoa(n-1))
	w.WriteHeader(http.StatusFound)
}

func delay(w http.ResponseWriter, r *http.Request, arg string) {
	ms, err := strconv.Atoi(arg)
	if err != nil || ms < 0 {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		io.WriteString(w, "ok")
	case <-r.Context().Done():
	}
}
