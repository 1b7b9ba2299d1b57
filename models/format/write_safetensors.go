package format

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/tpslice/tpslice/quant"
)

// WriteSafetensors writes tensors to a safetensors file under their names as given (pass
// Hugging Face names, see HFName, for a checkpoint OpenSafetensors maps back): an 8-byte
// little-endian header length, a JSON header padded with spaces to a multiple of 8 bytes,
// then the tensors' bytes back to back in name order.
func WriteSafetensors(path string, tensors []Tensor) error {
	if err := checkTensors("safetensors", path, tensors); err != nil {
		return err
	}
	sorted := make([]Tensor, len(tensors))
	copy(sorted, tensors)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Info.Name < sorted[j].Info.Name })

	type entry struct {
		DType       string   `json:"dtype"`
		Shape       []int    `json:"shape"`
		DataOffsets [2]int64 `json:"data_offsets"`
	}
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off int64
	for _, t := range sorted {
		if t.Info.Name == "__metadata__" {
			return fmt.Errorf("safetensors %s: write tensor %q: reserved name", path, t.Info.Name)
		}
		if t.Info.DType.Quantized() {
			return fmt.Errorf("safetensors %s: write tensor %q: safetensors has no %v blocks; write GGUF, or f32/bf16/f16", path, t.Info.Name, t.Info.DType)
		}
		n := int64(t.storedBytes())
		header[t.Info.Name] = entry{
			DType:       strings.ToUpper(t.Info.DType.String()),
			Shape:       t.Info.Shape,
			DataOffsets: [2]int64{off, off + n},
		}
		off += n
	}
	js, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("safetensors %s: header: %w", path, err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}

	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("safetensors %s: %w", path, err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	buf := binary.LittleEndian.AppendUint64(nil, uint64(len(js)))
	buf = append(buf, js...)
	_, err = w.Write(buf)
	for _, t := range sorted {
		if err != nil {
			break
		}
		err = writeEncoded(w, t)
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("safetensors %s: %w", path, err)
	}
	return nil
}

// writeEncoded writes a tensor's values in its storage dtype, in chunks: a block type's
// Blocks as given, or its values quantized.
func writeEncoded(w *bufio.Writer, t Tensor) error {
	if t.Info.DType.Quantized() {
		b := t.Blocks
		if b == nil {
			b = make([]byte, t.storedBytes())
			if err := quant.Quantize(t.Info.DType, b, t.Data); err != nil {
				return fmt.Errorf("tensor %s: %w", t.Info.Name, err)
			}
		}
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("tensor %s: %w", t.Info.Name, err)
		}
		return nil
	}
	const chunk = 1 << 16
	buf := make([]byte, 0, chunk*4)
	for lo := 0; lo < len(t.Data); lo += chunk {
		buf = encodeF32(buf[:0], t.Info.DType, t.Data[lo:min(lo+chunk, len(t.Data))])
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("tensor %s: %w", t.Info.Name, err)
		}
	}
	return nil
}
