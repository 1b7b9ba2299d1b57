package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/server"
)

// apiKeyEnv is the environment variable the API key may come from instead of --api-key;
// the printed curl command reads it.
const apiKeyEnv = "TPSLICE_API_KEY"

// serveMaxBatchTokens is serve's step budget, below the engine's 2048 (vLLM's for a GPU):
// on the CPU device runtime a step's time grows with its tokens, so a 2048-token prefill
// step stalls the running batch for seconds. With 256 (what bench runs) concurrency 32 had
// 1.0-1.4× the throughput, 0.2-0.4× the TTFT p50 and a lower ITL p99 / p50 with arrivals
// (docs/benchmarks/serving.md, issue 13, "serve's default budget is now 256").
const serveMaxBatchTokens = 256

// serveCollectiveTimeout is serve's --collective-timeout, below comm's 60 s: a server
// rebuilds its TP group after a stuck collective, so it should find out soon.
const serveCollectiveTimeout = 10 * time.Second

// servePrefillSteps is serve's Config.PrefillSteps: while sequences decode, a backlog of
// prompt tokens is taken 1/8 a step, in 8 steps, so that a newcomer's
// prompt does not make the steps it rides in several times as long as a decode step.
// Against 4 and none it gave the lowest ITL p99 / p50 with arrivals at concurrency 32,
// the same throughput and a TTFT p50 1.0-3.2× as long (docs/benchmarks/serving.md, issue
// 13, "Spreading the prefill").
const servePrefillSteps = 8

// servePrefillBurstRatio is serve's Config.PrefillBurstRatio: once as many sequences wait
// or prefill as decode, their prompts take the whole budget instead of 1/8 of the backlog a
// step. At concurrency 32 on demo TP 8 a closed-loop client's waves then line up: 71 steps
// for 64 requests instead of 80 (bench's batches take 72), 13 with prompt tokens instead
// of 25, serve ÷ bench median 0.75 against 0.70 over twelve alternated rounds; 0.5 and 2 gave
// the same steps; Poisson arrivals (the ITL workload) seldom reach it
// (docs/benchmarks/serving.md, "Waves in step", 2026-12-04 sixth session).
const servePrefillBurstRatio = 1.0

// serve runs the OpenAI-compatible server until SIGINT or SIGTERM, then shuts it down
// gracefully and returns nil.
func serve(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveUntil(ctx, args, stdout, stderr)
}

// serveOptions are serve's flags beyond the engine's config.
type serveOptions struct {
	host, servedName, chatTemplate string
	cpuProfile                     string // --cpuprofile: the server's CPU profile, written at shutdown
	port                           int
	shutdownTimeout                time.Duration
	srv                            server.Config
	bodyLimit                      sizeFlag
}

// serveUntil serves until ctx ends.
func serveUntil(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	cfg, opt, err := parseServeFlags(args, stderr)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(opt.cpuProfile)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer func() {
		if perr := stopProfile(); perr != nil {
			err = errors.Join(err, fmt.Errorf("serve: %w", perr))
		}
	}()
	ln, err := net.Listen("tcp", net.JoinHostPort(opt.host, strconv.Itoa(opt.port)))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv, err := server.New(opt.srv)
	if err != nil {
		ln.Close()
		return fmt.Errorf("serve: %w", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	shutdown := func() error {
		sctx, cancel := context.WithTimeout(context.Background(), opt.shutdownTimeout)
		defer cancel()
		err := srv.Shutdown(sctx)
		if serr := <-served; err == nil {
			err = serr
		}
		return err
	}

	fmt.Fprintf(stderr, "tpslice: loading %s at TP=%d (/health answers 503 until it is ready)\n", cfg.Model, cfg.TP)
	e, err := newEngine(cfg, stderr)
	if err != nil {
		return errors.Join(fmt.Errorf("serve: %w", err), shutdown())
	}
	defer e.Close()
	printLoadNotes(stderr, e.Model())
	srv.SetEngine(e)
	name := opt.srv.ModelName
	base := "http://" + net.JoinHostPort(curlHost(opt.host), strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	fmt.Fprintf(stdout, "tpslice: serving %s at TP=%d on %s (OpenAI API under /v1; /health, /metrics)\n", name, cfg.TP, base)
	fmt.Fprintln(stdout, curlCommand(base, name, opt.srv.APIKey != ""))
	if opt.srv.APIKey != "" {
		fmt.Fprintf(stderr, "tpslice: requests need the API key; the curl above reads it from $%s\n", apiKeyEnv)
	}

	dumps := make(chan os.Signal, 1)
	signal.Notify(dumps, syscall.SIGUSR1) // as py-spy and NCCL's flight recorder: dump on demand
	defer signal.Stop(dumps)
wait:
	for {
		select {
		case <-dumps:
			fmt.Fprintf(stderr, "tpslice: SIGUSR1: the flight recorder's last collectives of every rank:\n%v\n", e.Flight(0))
		case <-e.Failed(): // the TP group could not be rebuilt: exit non-zero for a restart
			return errors.Join(fmt.Errorf("serve: %w", e.Health()), shutdown())
		case err := <-served: // the listener failed
			served <- err
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	fmt.Fprintf(stderr, "tpslice: shutting down: finishing the requests in flight (at most %v)\n", opt.shutdownTimeout)
	if err := shutdown(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	fmt.Fprintln(stderr, "tpslice: stopped")
	return nil
}

// parseServeFlags reads serve's flags.
func parseServeFlags(args []string, stderr io.Writer) (engine.Config, serveOptions, error) {
	var (
		ef  engineFlags
		opt = serveOptions{bodyLimit: server.DefaultMaxBodyBytes}
	)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ef.cfg.CollectiveTimeout = serveCollectiveTimeout
	ef.register(fs)
	ef.registerRuntime(fs)
	fs.StringVar(&opt.host, "host", "127.0.0.1", "address to listen on (0.0.0.0: every interface)")
	fs.IntVar(&opt.port, "port", 8000, "port to listen on (0: any free port)")
	fs.StringVar(&opt.servedName, "served-model-name", "", "the model's name in the API (default: --model)")
	fs.StringVar(&opt.srv.APIKey, "api-key", "", "require \"Authorization: Bearer KEY\" on "+server.KeyedRoutes()+" (default: $"+apiKeyEnv+", which keeps it out of ps)")
	fs.IntVar(&opt.srv.MaxWaiting, "max-waiting", server.DefaultMaxWaiting, "requests waiting for their first token at most; more get 429")
	fs.IntVar(&ef.cfg.MaxRunning, "max-running", 0, "sequences decoded together at most (continuous batching; 0: the largest decode graph bucket, 64, or fewer if the KV cache or --max-batch-tokens is smaller)")
	fs.BoolVar(&ef.cfg.NoPrefixCaching, "no-prefix-caching", false, "turn automatic prefix caching off (on: requests reuse the cached KV blocks of a prompt prefix they share)")
	fs.IntVar(&ef.cfg.KVBlocks, "kv-blocks", 0, "KV cache blocks of 16 tokens, taken by sequences as they grow (0: 16 sequences of the whole context)")
	fs.Var(&opt.bodyLimit, "max-body-bytes", "request body size limit (e.g. 64K, 1M); larger bodies get 413")
	fs.IntVar(&opt.srv.MaxConnections, "max-connections", server.DefaultMaxConnections, "connections served at once (idle keep-alives included); past it /health still answers, other routes get 503")
	fs.DurationVar(&opt.shutdownTimeout, "shutdown-timeout", 30*time.Second, "on SIGTERM/SIGINT, how long requests in flight may take to finish before they are ended")
	fs.DurationVar(&opt.srv.PingInterval, "ping-interval", server.DefaultPingInterval, "send \": ping\" on a stream silent this long (a long prefill); negative: never")
	fs.DurationVar(&opt.srv.WriteTimeout, "write-timeout", server.DefaultWriteTimeout, "how long a write to a client may make no progress (a client that stopped reading its stream) before the connection is closed and its generation cancelled, freeing its KV cache; negative: never")
	cpuProfileFlag(fs, &opt.cpuProfile)
	fs.StringVar(&opt.chatTemplate, "chat-template", "", "a Jinja chat template `FILE` (default: the model's own, else a plain one)")
	fs.IntVar(&ef.cfg.MaxBatchTokens, "max-batch-tokens", serveMaxBatchTokens, "tokens per step at most: decode tokens first, then prompt chunks fill the rest, in one forward pass (0: the engine's default, 2048)")
	fs.IntVar(&ef.cfg.MaxBatchTokens, "max-num-batched-tokens", serveMaxBatchTokens, "vLLM's name of --max-batch-tokens")
	fs.IntVar(&ef.cfg.PrefillSteps, "prefill-steps", servePrefillSteps, "while sequences decode, a backlog of prompt tokens is taken in N steps, 1/N of it a step (at least the step's decode tokens), so that a newcomer's prompt is spread over steps instead of stretching one (0 or 1: all the budget leaves)")
	fs.Float64Var(&ef.cfg.PrefillBurstRatio, "prefill-burst-ratio", servePrefillBurstRatio, "a backlog of at least R waiting or prefilling sequences per decoding one is a burst: its prompts take all the budget leaves until it is taken, not --prefill-steps' share (0: never)")
	if err := parseFlags(fs, args); err != nil {
		return engine.Config{}, opt, err
	}
	fail := func(format string, a ...any) (engine.Config, serveOptions, error) {
		return engine.Config{}, opt, fmt.Errorf("serve: "+format, a...)
	}
	bad := func(format string, a ...any) (engine.Config, serveOptions, error) { // the command line's own mistake
		return engine.Config{}, opt, usageError{fmt.Errorf("serve: "+format, a...)}
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case opt.port < 0 || opt.port > 65535:
		return bad("--port must be in [0, 65535], got %d", opt.port)
	case opt.srv.MaxWaiting < 1:
		return bad("--max-waiting must be at least 1, got %d", opt.srv.MaxWaiting)
	case ef.cfg.MaxRunning < 0:
		return bad("--max-running must be ≥ 0, got %d", ef.cfg.MaxRunning)
	case ef.cfg.KVBlocks < 0:
		return bad("--kv-blocks must be ≥ 0, got %d", ef.cfg.KVBlocks)
	case opt.srv.MaxConnections < 1:
		return bad("--max-connections must be at least 1, got %d", opt.srv.MaxConnections)
	case opt.bodyLimit < 1024:
		return bad("--max-body-bytes must be at least 1K, got %d", opt.bodyLimit)
	case opt.srv.WriteTimeout == 0:
		return bad("--write-timeout must be > 0 (negative: never), got 0")
	case opt.shutdownTimeout < 0:
		return bad("--shutdown-timeout must be ≥ 0, got %v", opt.shutdownTimeout)
	case ef.cfg.CollectiveTimeout <= 0:
		return bad("--collective-timeout must be > 0, got %v", ef.cfg.CollectiveTimeout)
	case ef.cfg.MaxBatchTokens < 0:
		return bad("--max-batch-tokens must be ≥ 0, got %d", ef.cfg.MaxBatchTokens)
	case ef.cfg.PrefillSteps < 0:
		return bad("--prefill-steps must be ≥ 0, got %d", ef.cfg.PrefillSteps)
	case !(ef.cfg.PrefillBurstRatio >= 0) || math.IsInf(ef.cfg.PrefillBurstRatio, 0):
		return bad("--prefill-burst-ratio must be a number ≥ 0, got %v", ef.cfg.PrefillBurstRatio)
	}
	cfg, err := ef.config()
	if err != nil {
		return fail("%w", err)
	}
	if cfg.Fabric, err = resolveFabric(ef.topology, cfg.TP, stderr); err != nil {
		return fail("%w", err)
	}
	if opt.srv.APIKey == "" {
		opt.srv.APIKey = os.Getenv(apiKeyEnv)
	}
	cfg.MaxWaiting = opt.srv.MaxWaiting // the server's bound is reached first (it counts prefills too)
	opt.srv.MaxBodyBytes = int(opt.bodyLimit)
	opt.srv.ModelName = opt.servedName
	if opt.srv.ModelName == "" {
		opt.srv.ModelName = cfg.Model
	}
	if opt.chatTemplate != "" {
		b, err := os.ReadFile(opt.chatTemplate)
		if err != nil {
			return fail("--chat-template: %w", err)
		}
		opt.srv.ChatTemplate, opt.srv.ChatTemplateOrigin = string(b), opt.chatTemplate
	} else if opt.srv.ChatTemplate, opt.srv.ChatTemplateOrigin, err = server.LoadChatTemplate(cfg.Model); err != nil {
		return fail("%w", err)
	}
	opt.srv.ErrorLog = stderr
	return cfg, opt, nil
}

// curlHost is the host a local curl reaches a server listening on host at.
func curlHost(host string) string {
	switch host {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::", "[::]":
		return "::1"
	}
	return host
}

// curlCommand is a curl that streams a completion from the server at base.
func curlCommand(base, model string, auth bool) string {
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": "Once upon a time", "max_tokens": 64, "temperature": 0, "stream": true})
	cmd := "curl -N " + base + "/v1/completions -H 'Content-Type: application/json'"
	if auth {
		cmd += ` -H "Authorization: Bearer $` + apiKeyEnv + `"`
	}
	return cmd + " -d " + shellQuote(string(body))
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
