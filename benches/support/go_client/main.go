// The kube-apiserver side of benches/big_reviews.rs: Go's own HTTP client,
// whose HTTP/2 implementation is the one kube-apiserver calls webhooks
// with, sending n AdmissionReviews at once. Only the standard library, so
// `go build` needs no module download.
//
// Each review is the file -body with its -uid placeholder replaced by
// 00000000-0000-4000-8000-<i, 12 digits>. Prints one line per review:
// "<i> ok <ms>", "<i> status <code> <ms>", "<i> timeout <ms>" or
// "<i> error <ms> <text>"; then "wall <ms>" from the first send to the
// last answer.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

func main() {
	addr := flag.String("addr", "", "the webhook's host:port")
	ca := flag.String("ca", "", "PEM file of the CA that signed the serving certificate")
	body := flag.String("body", "", "the review to send")
	placeholder := flag.String("uid", "", "the uid in -body to replace per review")
	n := flag.Int("n", 500, "reviews, all at once")
	timeout := flag.Duration("timeout", 10*time.Second, "per review, as the webhook's timeoutSeconds")
	h1 := flag.Bool("h1", false, "HTTP/1.1 instead of HTTP/2")
	flag.Parse()

	pem, err := os.ReadFile(*ca)
	if err != nil {
		fail(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		fail(errors.New("no certificate in " + *ca))
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2:   !*h1,
		MaxIdleConnsPerHost: *n,
	}
	if *h1 {
		// An empty map turns HTTP/2 off.
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	client := &http.Client{Transport: tr, Timeout: *timeout}

	template, err := os.ReadFile(*body)
	if err != nil {
		fail(err)
	}
	if !bytes.Contains(template, []byte(*placeholder)) {
		fail(errors.New("the uid placeholder is not in the body"))
	}
	uids := make([]string, *n)
	bodies := make([][]byte, *n)
	for i := range bodies {
		uids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		bodies[i] = bytes.Replace(template, []byte(*placeholder), []byte(uids[i]), 1)
	}

	// One small call first, as a running apiserver has its connection
	// to the webhook already; the reviews then share it (and the further
	// connections the transport opens past the server's stream limit).
	if resp, err := client.Get("https://" + *addr + "/"); err != nil {
		fail(err)
	} else {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	results := make([]string, *n)
	began := time.Now()
	var wg sync.WaitGroup
	for i := range bodies {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			start := time.Now()
			results[i] = fmt.Sprintf("%d %s", i, send(client, *addr, bodies[i], uids[i], start))
		}(i)
	}
	wg.Wait()
	fmt.Println(strings.Join(results, "\n"))
	fmt.Printf("wall %d\n", time.Since(began).Milliseconds())
}

func send(client *http.Client, addr string, body []byte, uid string, start time.Time) string {
	ms := func() int64 { return time.Since(start).Milliseconds() }
	req, err := http.NewRequest("POST", "https://"+addr+"/validate?timeout=10s", bytes.NewReader(body))
	if err != nil {
		return fmt.Sprintf("error %d %v", ms(), err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "kube-apiserver-admission")
	resp, err := client.Do(req)
	if err != nil {
		var t interface{ Timeout() bool }
		if errors.As(err, &t) && t.Timeout() {
			return fmt.Sprintf("timeout %d", ms())
		}
		return fmt.Sprintf("error %d %s", ms(), strings.ReplaceAll(err.Error(), "\n", " "))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Sprintf("error %d reading the answer: %v", ms(), err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("status %d %d", resp.StatusCode, ms())
	}
	var review struct {
		Response struct {
			UID     string `json:"uid"`
			Allowed bool   `json:"allowed"`
		} `json:"response"`
	}
	if err := json.Unmarshal(answer, &review); err != nil || review.Response.UID != uid || !review.Response.Allowed {
		return fmt.Sprintf("error %d not allowed, or another uid: %.200s", ms(), answer)
	}
	return fmt.Sprintf("ok %d", ms())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "go_client:", err)
	os.Exit(2)
}
