package server

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/tpslice/tpslice/engine"
	"github.com/tpslice/tpslice/models/tokenizer"
)

// Engine is what the server needs of an engine; *engine.Engine is one.
type Engine interface {
	Generate(ctx context.Context, req engine.Request, emit func(engine.Token) error) (engine.Result, error)
	// GenerateEach runs the choices of one request (n of them, or several prompts),
	// submitted together.
	GenerateEach(ctx context.Context, reqs []engine.Request, emit func(int, engine.Token) error, done func(int, engine.Result, error)) error
	Tokenizer() *tokenizer.Tokenizer
	Model() engine.Model
	Blocks() *engine.BlockPool
}

// How long a request's headers, and then its body, may take to arrive.
const (
	HeaderTimeout = 5 * time.Second
	BodyTimeout   = 60 * time.Second
)

// Defaults of Config's zero fields.
const (
	DefaultMaxWaiting     = 128
	DefaultMaxBodyBytes   = 1 << 20
	DefaultMaxConnections = 1024
	DefaultPingInterval   = 5 * time.Second
	// DefaultWriteTimeout is longer than any pause a reading client makes (a GC, a slow
	// proxy) and short enough that a client that stopped reading does not hold its KV
	// blocks for long.
	DefaultWriteTimeout = 60 * time.Second
)

// abortWait bounds how long Shutdown waits, once its grace period is over and it ended the
// generations in flight, for their responses to be written.
const abortWait = 5 * time.Second

// Config says how the server serves.
type Config struct {
	// ModelName is the model's name in requests and responses (default: the model's
	// Config().Name).
	ModelName string
	// APIKey, when set, is required as "Authorization: Bearer <key>" on the routes
	// KeyedRoutes names (all but /health and /metrics).
	APIKey string
	// MaxWaiting bounds the requests admitted that have no token yet; one more is refused
	// with 429 (default DefaultMaxWaiting).
	MaxWaiting int
	// MaxBodyBytes bounds a request body; a larger one is refused with 413 (default
	// DefaultMaxBodyBytes).
	MaxBodyBytes int
	// MaxConnections bounds the connections served at once, idle keep-alives included
	// (default DefaultMaxConnections). A few more are read one request each, so that
	// /health still answers; any other route is answered the API's 503 and the connection
	// closed.
	MaxConnections int
	// PingInterval is how long a stream may stay silent (a long prefill) before the server
	// sends an SSE comment ": ping", which also finds clients that left (default
	// DefaultPingInterval; negative: never).
	PingInterval time.Duration
	// WriteTimeout is how long a write to a client may make no progress (a client that
	// stopped reading its stream) before the connection is closed; a stream's generation is
	// then cancelled and its KV blocks freed, as when the client leaves (default
	// DefaultWriteTimeout; negative: never).
	WriteTimeout time.Duration
	// ChatTemplate is the Jinja source of the chat template (LoadChatTemplate finds a
	// model's), ChatTemplateOrigin where it came from; empty: PlainChatTemplate.
	ChatTemplate, ChatTemplateOrigin string
	// ErrorLog receives the HTTP layer's errors, with credentials redacted (nil:
	// discarded).
	ErrorLog io.Writer
}

// loaded is the engine once it is ready, with what the handlers derive from it once.
type loaded struct {
	e          Engine
	name       string
	contextLen int
	vocab      int    // the model's vocabulary: token ids a request names are below it
	bos, eos   string // the text of BOS and EOS, for chat templates
}

// Server is the OpenAI-compatible HTTP API over one engine. It serves /health (and
// answers /v1/ with 503) until SetEngine gives it the loaded engine.
type Server struct {
	cfg     Config
	log     *log.Logger
	tmpl    *ChatTemplate
	http    *fasthttp.Server
	eng     atomic.Pointer[loaded]
	metrics *metrics
	created int64

	waiting, running atomic.Int64
	conns            atomic.Int64 // connections open, over all listeners (connLimiter)
	draining         atomic.Bool
	mu               sync.Mutex // guards listeners, and draining's change against Serve
	listeners        []*onceCloseListener
	// abortCtx is the parent of every generation's context; Shutdown cancels it when its
	// grace period is over.
	abortCtx context.Context
	abort    context.CancelFunc
}

// New makes a server: it compiles the chat template and sets up the metrics.
func New(cfg Config) (*Server, error) {
	if cfg.MaxWaiting <= 0 {
		cfg.MaxWaiting = DefaultMaxWaiting
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxConnections <= 0 {
		cfg.MaxConnections = DefaultMaxConnections
	}
	if cfg.PingInterval == 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	tmpl, err := CompileChatTemplate(cfg.ChatTemplate, cfg.ChatTemplateOrigin)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, tmpl: tmpl, created: time.Now().Unix()}
	s.abortCtx, s.abort = context.WithCancel(context.Background())
	s.metrics = newMetrics(s)
	logOut := cfg.ErrorLog
	if logOut == nil {
		logOut = io.Discard
	}
	s.log = log.New(redactingWriter{logOut}, "tpslice server: ", log.LstdFlags)
	s.http = &fasthttp.Server{
		Handler:            s.handle,
		ErrorHandler:       s.handleTransportError,
		Name:               "tpslice",
		MaxRequestBodySize: cfg.MaxBodyBytes,
		// connLimiter bounds the connections; fasthttp's bound (whose refusal is plain text)
		// sits well above it, since fasthttp counts a connection until its worker returns,
		// a moment after the connection's Close gave its place back to connLimiter.
		Concurrency: 2 * (cfg.MaxConnections + healthReserve),
		// A request's headers must arrive within HeaderTimeout (a slowloris client is
		// answered 408 then); its body then has BodyTimeout.
		ReadTimeout: HeaderTimeout,
		HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			return fasthttp.RequestConfig{ReadTimeout: BodyTimeout}
		},
		IdleTimeout: 60 * time.Second,
		// The API reads JSON only: a multipart body is answered 415, not parsed.
		DisablePreParseMultipartForm: true,
		CloseOnShutdown:              true,
		Logger:                       s.log,
	}
	return s, nil
}

// SetEngine gives the server its loaded engine: from now on /health answers 200 and /v1/
// serves.
func (s *Server) SetEngine(e Engine) {
	tok, m := e.Tokenizer(), e.Model()
	name := s.cfg.ModelName
	if name == "" {
		name = m.Config().Name
	}
	s.eng.Store(&loaded{
		e: e, name: name, contextLen: m.Config().ContextLength, vocab: m.Config().Vocab,
		bos: tok.Piece(tok.BOS()), eos: tok.Piece(tok.EOS()),
	})
}

// Serve serves HTTP on ln until Shutdown; it then returns nil.
func (s *Server) Serve(ln net.Listener) error {
	l := &onceCloseListener{Listener: s.newConnLimiter(ln)}
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		_ = l.Close()
		return nil
	}
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()
	if err := s.http.Serve(l); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// onceCloseListener closes its listener once, whoever closes it first: Shutdown does, so
// that a Serve that has not yet handed the listener to fasthttp stops too, and fasthttp
// does again.
type onceCloseListener struct {
	net.Listener
	once sync.Once
	err  error
}

func (l *onceCloseListener) Close() error {
	l.once.Do(func() { l.err = l.Listener.Close() })
	return l.err
}

// Shutdown stops accepting connections and lets the requests in flight finish. When ctx
// ends first, it cancels their generations: streams end with an error event and
// "data: [DONE]", other requests with 503; it then waits a few seconds more for those
// responses to be written. It returns an error only when connections are still open
// after that.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining.Store(true)
	listeners := s.listeners
	s.mu.Unlock()
	for _, l := range listeners {
		_ = l.Close() // fasthttp's Serve returns; a close error comes back from fasthttp's Shutdown
	}
	done := make(chan error, 1)
	go func() { done <- s.http.ShutdownWithContext(context.Background()) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	s.abort()
	select {
	case err := <-done:
		return err
	case <-time.After(abortWait):
		return fmt.Errorf("server: shutdown: connections still open %v after ending the generations in flight", abortWait)
	}
}
