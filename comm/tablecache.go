package comm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// LoadOrTune is the cache policy of every tuned table (comm's TunedTable, fused's):
//
//   - a cache that current accepts (tuned under the caller's fingerprint, covering what
//     the caller asks for) is returned as it is, fresh false;
//   - a missing cache, or one current refuses (tuned for another node, dtype, hidden size
//     or range: foreign), is tuned again and overwritten;
//   - a damaged cache (bad JSON, an invalid row) is tuned again too, but not overwritten:
//     the file is kept as path+".damaged" (replacing an older one), since something other
//     than the tuner may have written it, and the warning says so;
//   - a cache that cannot be read (no permission) is tuned again and left alone.
//
// When t is not nil, err is a warning (the cache was damaged or unreadable, or the tuned
// table could not be cached): the table is good to use. When t is nil, tuning failed, or a
// damaged cache could not be kept aside.
func LoadOrTune[E Entry[E]](path string, current func(*BucketTable[E]) bool, tune func() (*BucketTable[E], error)) (t *BucketTable[E], fresh bool, err error) {
	cached, loadErr := LoadTable[E](path)
	var warning error
	switch {
	case loadErr == nil && current(cached):
		return cached, false, nil
	case loadErr == nil, errors.Is(loadErr, fs.ErrNotExist):
	case errors.As(loadErr, new(*fs.PathError)): // the file could not be read
		if t, err = tune(); err != nil {
			return nil, false, err
		}
		return t, true, fmt.Errorf("%w; tuned again, not cached", loadErr)
	default:
		kept := path + ".damaged"
		if err := os.Rename(path, kept); err != nil {
			return nil, false, fmt.Errorf("%w; not tuned again, since it could not be kept aside: %w", loadErr, err)
		}
		warning = fmt.Errorf("%w; kept as %s and tuned again", loadErr, kept)
	}
	if t, err = tune(); err != nil {
		return nil, false, err
	}
	if err := SaveTable(path, t); err != nil {
		return t, true, errors.Join(warning, fmt.Errorf("comm: autotuned, but could not cache the table: %w", err))
	}
	return t, true, warning
}
