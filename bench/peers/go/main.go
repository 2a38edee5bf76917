// Go net/http load client for bench/peers/run.sh: one http.Client (one Transport), C goroutines
// each sending one request after another until the duration is over, every body read to its end.
// Prints one JSON line: requests, errors, elapsed_s, rps, p50_ms, p99_ms.
//
//	go-load URL [-c IN_FLIGHT] [-d SECONDS] [-threads T] [-http 1.1|2|3] [-insecure]
//
// HTTP/2 is h2c by prior knowledge over TCP (http.Protocols.SetUnencryptedHTTP2) and ALPN "h2"
// only over TLS; HTTP/1.1 offers only "http/1.1". HTTP/3 is quic-go's http3.Transport (prior
// knowledge: QUIC to the URL's port), the version the interop suite's Go server pins.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"os"
	"runtime"

	"github.com/quic-go/quic-go/http3"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Log-linear latency histogram in microseconds: exact below 128 µs, then 64 buckets per power
// of two (≤ 1.6 % error). Shared by all goroutines through atomic adds.
const subBits = 6
const subCount = 1 << subBits

var hist [(64 - subBits + 1) * subCount]atomic.Uint64

func bucket(us uint64) int {
	if us < 2*subCount {
		return int(us)
	}
	e := bits.Len64(us) - subBits - 1 // us>>e is in [subCount, 2*subCount)
	return (e+1)*subCount + int(us>>e) - subCount
}

func bucketValue(i int) float64 { // midpoint of the bucket, µs
	if i < 2*subCount {
		return float64(i)
	}
	e := i/subCount - 1
	lo := uint64(i%subCount+subCount) << e
	return float64(lo) + float64(uint64(1)<<e)/2
}

func quantile(q float64, total uint64) float64 {
	if total == 0 {
		return 0
	}
	target := uint64(q*float64(total) + 0.5)
	if target < 1 {
		target = 1
	}
	var seen uint64
	for i := range hist {
		seen += hist[i].Load()
		if seen >= target {
			return bucketValue(i)
		}
	}
	return 0
}

func main() {
	conc := flag.Int("c", 64, "requests in flight")
	dur := flag.Float64("d", 5, "duration, seconds")
	threads := flag.Int("threads", 1, "GOMAXPROCS")
	version := flag.String("http", "1.1", "1.1, 2 or 3")
	insecure := flag.Bool("insecure", false, "accept any TLS certificate")
	// Go's flag package stops at the first positional argument: take the URL from anywhere.
	var url string
	var rest []string
	for _, a := range os.Args[1:] {
		if url == "" && !strings.HasPrefix(a, "-") && (strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://")) {
			url = a
		} else {
			rest = append(rest, a)
		}
	}
	flag.CommandLine.Parse(rest)
	if url == "" {
		fmt.Fprintln(os.Stderr, "usage: go-load URL [-c N] [-d S] [-threads T] [-http 1.1|2] [-insecure]")
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*threads)

	var protocols http.Protocols
	h3 := false
	switch *version {
	case "3":
		h3 = true
	case "1.1", "1":
		protocols.SetHTTP1(true)
	case "2":
		if strings.HasPrefix(url, "https://") {
			protocols.SetHTTP2(true)
		} else {
			protocols.SetUnencryptedHTTP2(true)
		}
	default:
		fmt.Fprintln(os.Stderr, "-http: 1.1, 2 or 3")
		os.Exit(2)
	}
	tr := &http.Transport{
		Protocols:           &protocols,
		MaxIdleConns:        0, // no limit
		MaxIdleConnsPerHost: *conc,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // same request as the other clients (no Accept-Encoding)
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: *insecure},
		Proxy:               nil,
	}
	client := &http.Client{Transport: tr}
	if h3 {
		// One http3.Transport: quic-go opens one QUIC connection per origin and queues streams
		// past the server's MAX_STREAMS on it (it has no second connection).
		client = &http.Client{Transport: &http3.Transport{
			TLSClientConfig:    &tls.Config{InsecureSkipVerify: *insecure},
			DisableCompression: true,
		}}
	}

	start := time.Now()
	deadline := start.Add(time.Duration(*dur * float64(time.Second)))
	ctx := context.Background()
	var requests, errors atomic.Uint64
	var firstErr sync.Once
	var wg sync.WaitGroup
	for i := 0; i < *conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				t := time.Now()
				err := one(ctx, client, url)
				if err != nil {
					errors.Add(1)
					firstErr.Do(func() { fmt.Fprintln(os.Stderr, "first error:", err) })
					time.Sleep(10 * time.Millisecond)
					continue
				}
				us := uint64(time.Since(t).Microseconds())
				if us < 1 {
					us = 1
				}
				hist[bucket(us)].Add(1)
				requests.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	n := requests.Load()
	out, _ := json.Marshal(map[string]any{
		"client":      "go",
		"requests":    n,
		"errors":      errors.Load(),
		"elapsed_s":   elapsed,
		"rps":         float64(n) / elapsed,
		"p50_ms":      quantile(0.50, n) / 1000,
		"p99_ms":      quantile(0.99, n) / 1000,
		"concurrency": *conc,
		"threads":     *threads,
		"http":        *version,
		"go":          runtime.Version(),
	})
	fmt.Println(string(out))
}

func one(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	return nil
}
