package main

// HTTP/3 (--h3): quic-go's http3 server with the same handler as the
// net/http ports, on a UDP socket bound before `ready` is printed.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// startH3 binds 127.0.0.1:port (UDP) and serves HTTP/3 on it. The tight
// profile shortens QUIC's idle timeout to 2 s (quic-go has no request
// limit per connection, and no header timeout of its own).
func startH3(port int, cert, key, profile string) (*http3.Server, error) {
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, err
	}
	pc, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, err
	}
	qc := &quic.Config{}
	if profile == "tight" {
		qc.MaxIdleTimeout = 2 * time.Second
	}
	srv := &http3.Server{
		Handler:    http.HandlerFunc(route),
		TLSConfig:  http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{pair}}),
		QUICConfig: qc,
	}
	go func() {
		if err := srv.Serve(pc); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fail(err)
		}
	}()
	return srv, nil
}
