package format

// RawTensor places one tensor at bytes [Begin, End) of a file.
type RawTensor struct {
	Info       TensorInfo
	Begin, End uint64
}

// Layout reads a file's own header (data is the whole file) and says where its tensors
// lie: formats that are a header and tensors at offsets it implies, as llama2.c's are.
type Layout func(data []byte) ([]RawTensor, error)

// OpenRaw memory-maps the file at path and lists the tensors layout finds in it; format
// names the source in errors ("llama2.c"). Each range must lie inside the file and hold
// exactly its tensor's bytes.
func OpenRaw(format, path string, layout Layout) (*FileSource, error) {
	s := newFileSource(format, path)
	if _, err := s.mapFile(path); err != nil {
		return nil, err
	}
	if err := s.addRaw(layout); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// RawFromBytes is OpenRaw for a file held in memory (an embedded model); name names it.
// data must stay unchanged while the source is open.
func RawFromBytes(format, name string, data []byte, layout Layout) (*FileSource, error) {
	s := newFileSource(format, name)
	s.files = append(s.files, mappedFile{path: name, data: data, unmap: func() error { return nil }})
	if err := s.addRaw(layout); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *FileSource) addRaw(layout Layout) error {
	tensors, err := layout(s.files[0].data)
	if err != nil {
		return err
	}
	for _, t := range tensors {
		if err := s.add(0, t.Info, "", t.Begin, t.End); err != nil {
			return err
		}
	}
	s.seal()
	return nil
}
