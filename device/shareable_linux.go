//go:build linux

package device

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// wantSeals are the seals an owner puts on its memory file and an importer requires: nobody
// can shrink the file under another process's mapping (an access past its end would kill
// that process with SIGBUS) or grow it, and nobody can lift the seals.
const wantSeals = unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL

// newMapping creates a sealed memory file of size bytes and maps it shared.
func newMapping(name string, bytes int) (*mapping, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "memfd:"+name)
	if err := unix.Ftruncate(fd, int64(bytes)); err != nil {
		f.Close()
		return nil, fmt.Errorf("ftruncate to %d bytes: %w", bytes, err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, wantSeals); err != nil {
		f.Close()
		return nil, fmt.Errorf("sealing the memory file: %w", err)
	}
	mem, err := mapShared(fd, bytes)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &mapping{file: f, mem: mem}, nil
}

// openMapping maps bytes of a memory file another process exported, after checking that the
// file holds them and cannot shrink.
func openMapping(f *os.File, bytes int) (*mapping, error) {
	if f == nil {
		return nil, fmt.Errorf("the handle has no file descriptor")
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("fstat: %w", err)
	}
	if st.Size < int64(bytes) {
		return nil, fmt.Errorf("the handle describes %d bytes, its memory file holds %d", bytes, st.Size)
	}
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the memory file's seals (not a memfd?): %w", err)
	}
	if seals&wantSeals != wantSeals {
		return nil, fmt.Errorf("the memory file is not sealed against resizing (seals %#x): its owner could truncate it under this mapping", seals)
	}
	mem, err := mapShared(int(f.Fd()), bytes)
	if err != nil {
		return nil, err
	}
	return &mapping{mem: mem}, nil
}

func mapShared(fd, bytes int) ([]byte, error) {
	if bytes == 0 {
		return nil, nil // mmap refuses an empty mapping; an empty buffer needs none
	}
	mem, err := unix.Mmap(fd, 0, bytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap of %d bytes: %w", bytes, err)
	}
	return mem, nil
}

// dup returns a new descriptor of the owner's memory file, for a peer to receive.
func (m *mapping) dup() (*os.File, error) {
	fd, err := unix.FcntlInt(m.file.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dup of %s: %w", m.file.Name(), err)
	}
	return os.NewFile(uintptr(fd), m.file.Name()), nil
}

// release unmaps the memory and closes the file: the kernel frees the pages once no process
// maps or holds them.
func (m *mapping) release() error {
	var err error
	if m.mem != nil {
		if err = unix.Munmap(m.mem); err != nil {
			err = fmt.Errorf("munmap: %w", err)
		}
	}
	if m.file != nil {
		if cerr := m.file.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing %s: %w", m.file.Name(), cerr)
		}
	}
	return err
}
