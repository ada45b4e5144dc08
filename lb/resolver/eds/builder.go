package eds

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/lbkit/lbkit/internal/option"
	"github.com/lbkit/lbkit/lb/resolver"
)

// Scheme is the scheme this package resolves.
const Scheme = "eds"

// DefaultPollInterval is how often a resolver reads its file without
// [WithPollInterval].
const DefaultPollInterval = time.Second

func init() { resolver.Register(&Builder{}) }

// ReadFileFunc returns the content of the named file, like [os.ReadFile].
type ReadFileFunc func(name string) ([]byte, error)

// config is what the options set. It is read-only once NewBuilder returns.
type config struct {
	pollInterval time.Duration
	readFile     ReadFileFunc // nil: readRegularFile
	maxFileSize  int64
	parse        ParseOptions
}

func defaultConfig() config {
	return config{pollInterval: DefaultPollInterval, maxFileSize: DefaultMaxFileSize}
}

// read returns the content of the file named, through the configured
// ReadFileFunc or else readRegularFile; either way, content over the size
// limit is an error.
func (c config) read(name string) ([]byte, error) {
	if c.readFile == nil {
		return readRegularFile(name, c.maxFileSize)
	}
	data, err := c.readFile(name)
	if err == nil && int64(len(data)) > c.maxFileSize {
		return nil, tooLarge(name, int64(len(data)), c.maxFileSize)
	}
	return data, err
}

// Option configures a [Builder]. An out-of-range value makes [NewBuilder]
// return an error naming the option.
type Option interface{ apply(*config) error }

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// WithPollInterval sets how often a resolver reads its file, on the
// resolver's clock ([resolver.BuildOptions].Clock). The default is
// [DefaultPollInterval], 1 s. d must be positive.
func WithPollInterval(d time.Duration) Option {
	return optionFunc(func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("WithPollInterval(%v): not positive", d)
		}
		c.pollInterval = d
		return nil
	})
}

// WithReadFile replaces how a resolver reads its file, for example to read
// through another file system or, in tests, to observe each read. f is
// called with the cleaned absolute path of the target, on a goroutine that
// Close does not wait for: a read that blocks delays nothing but the next
// poll. Content over the size limit ([WithMaxFileSize]) is still refused.
// The default, or nil, opens regular files only (a FIFO, device or
// directory is an error wrapping [ErrNotRegularFile]) and reads at most the
// size limit.
func WithReadFile(f ReadFileFunc) Option {
	return optionFunc(func(c *config) error {
		c.readFile = f
		return nil
	})
}

// WithMaxFileSize sets the largest file, in bytes, a resolver accepts;
// a larger one is reported as an error wrapping [ErrFileTooLarge], and the
// last good state stays in force. The default is [DefaultMaxFileSize],
// 128 MiB. n must be positive.
func WithMaxFileSize(n int64) Option {
	return optionFunc(func(c *config) error {
		if n <= 0 {
			return fmt.Errorf("WithMaxFileSize(%d): not positive", n)
		}
		c.maxFileSize = n
		return nil
	})
}

// WithIgnoreUnknownFields makes a resolver ignore fields of the file that
// the proto messages do not have, as [ParseOptions].IgnoreUnknownFields
// does. By default such a field makes the file invalid: the error names
// its JSON path and the last good state stays in force.
func WithIgnoreUnknownFields() Option {
	return optionFunc(func(c *config) error {
		c.parse.IgnoreUnknownFields = true
		return nil
	})
}

// Builder builds eds resolvers. Create it with [NewBuilder]; the zero value
// behaves as NewBuilder(). A Builder is immutable and safe for concurrent
// use.
type Builder struct {
	cfg config // pollInterval == 0 only in the zero value
}

// Register in init checks that Builder is a resolver.Builder.
var _ resolver.TargetValidator = (*Builder)(nil)

// NewBuilder returns a builder with the given options applied in order, or
// an error naming the first option whose value is out of range.
func NewBuilder(opts ...Option) (*Builder, error) {
	cfg := defaultConfig()
	if err := option.Apply(&cfg, opts, Option.apply); err != nil {
		return nil, fmt.Errorf("eds: NewBuilder: %w", err)
	}
	return &Builder{cfg: cfg}, nil
}

func (b *Builder) config() config {
	if b.cfg.pollInterval == 0 {
		return defaultConfig()
	}
	return b.cfg
}

// Scheme returns [Scheme].
func (b *Builder) Scheme() string { return Scheme }

// TargetIsPath returns true: an eds target names a file
// ([resolver.PathTargets]).
func (b *Builder) TargetIsPath() bool { return true }

// ValidateTarget checks that target names a file as the package
// documentation describes: an empty authority and a non-empty path. It
// does not look at the file.
func (b *Builder) ValidateTarget(target resolver.Target) error {
	_, err := filePath(target)
	return err
}

// filePath returns the absolute, cleaned path target names.
func filePath(target resolver.Target) (string, error) {
	if target.Authority != "" {
		return "", fmt.Errorf("eds: target %v: authority %q not supported; write eds:///absolute/path", target, target.Authority)
	}
	p := target.Endpoint
	switch {
	case p == "", p == "/":
		return "", fmt.Errorf("eds: target %v: empty file path", target)
	case strings.ContainsRune(p, 0):
		return "", fmt.Errorf("eds: target %v: file path contains a NUL byte", target)
	case strings.HasSuffix(p, "/"):
		return "", fmt.Errorf("eds: target %v: file path %q ends with '/'", target, p)
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("eds: target %v: relative file path %q not supported; write eds:///absolute/path", target, p)
	}
	return path.Clean(p), nil
}

// Build starts a resolver for the file target names, reporting to cc. It
// fails only when [Builder.ValidateTarget] does; a missing or invalid file
// is reported to cc instead, and retried at every poll. The first read
// happens on the resolver's goroutine as soon as Build returns.
func (b *Builder) Build(target resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	file, err := filePath(target)
	if err != nil {
		return nil, err
	}
	if cc == nil {
		return nil, errors.New("eds: Build: nil ClientConn")
	}
	opts = opts.WithDefaults()
	return start(resolverConfig{
		file:   file,
		cfg:    b.config(),
		cc:     cc,
		clock:  opts.Clock,
		logger: opts.Logger.With("resolver", Scheme, "file", file),
	}), nil
}
