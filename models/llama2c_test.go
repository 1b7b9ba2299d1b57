package models

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/models/stories260k"
)

// stories260KPrompt is "Once upon a time" as run.c encodes it (BOS first), and
// stories260KGreedy run.c's next 64 greedy ids (`run stories260K.bin -z tok512.bin -t 0.0`,
// from ../shared/models/stories260K/README.md).
var (
	stories260KPrompt = []int32{1, 403, 407, 261, 378}
	stories260KGreedy = []int32{
		432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410, 408, 419, 292, 411, 322,
		265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268, 388, 426, 338, 391, 266, 267,
		337, 335, 312, 432, 398, 312, 286, 267, 414, 270, 333, 415, 426, 13, 438, 310, 439, 419, 357, 336,
	}
)

// TestStories260KMatchesRunC: the embedded stories260K gives run.c's 64 greedy ids after its
// prompt at TP 1, 2, 4 and 8 (8 pads the FFN of 172 to 176), with the same step-0 logits.
func TestStories260KMatchesRunC(t *testing.T) {
	src, cfg, err := Llama2CFromBytes(stories260k.Name, stories260k.Checkpoint)
	require.NoError(t, err)
	defer src.Close()
	require.Equal(t, Config{Name: "stories260K", Hidden: 64, Intermediate: 172, Layers: 5, Heads: 8, KVHeads: 4, HeadDim: 8,
		Vocab: 512, RopeTheta: 10000, RMSEps: 1e-5, TiedEmbeddings: true, ContextLength: 512, RopeLayout: RopeAdjacentPairs}, cfg)
	var step0 []float32
	for _, world := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("tp=%d", world), func(t *testing.T) {
			m := newTestLlama(t, world, cfg, src, tpTestOptions)
			st := oneSequence(m, stories260KPrompt, 0, 0)
			require.NoError(t, m.Forward(st))
			logits := m.Logits(st)[0]
			if step0 == nil {
				step0 = logits
			} else {
				requireLogitsClose(t, step0, logits, tpLogitTol, "step-0 logits vs TP 1")
			}
			pos := len(stories260KPrompt) - 1
			st = oneSequence(m, stories260KPrompt[pos:], pos, 1)
			var got []int32
			for range stories260KGreedy {
				require.NoError(t, m.Forward(st))
				next := best(m.Candidates(st)[0])
				got = append(got, next)
				pos++
				st = oneSequence(m, []int32{next}, pos, 1)
			}
			require.Equal(t, stories260KGreedy, got)
		})
	}
}

// TestStories260KEmbeddedIsShared: the embedded checkpoint is the file of
// ../shared/models/stories260K, byte for byte, and OpenLlama2C reads the file as
// Llama2CFromBytes reads the bytes.
func TestStories260KEmbeddedIsShared(t *testing.T) {
	path := filepath.Join("..", "..", "shared", "models", "stories260K", "stories260K.bin")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("../shared/models/stories260K is absent here (%v): the embedded copy is checked where it is present", err)
	}
	require.Equal(t, data, stories260k.Checkpoint)
	src, cfg, err := OpenLlama2C(path)
	require.NoError(t, err)
	defer src.Close()
	mem, memCfg, err := Llama2CFromBytes("stories260K", stories260k.Checkpoint)
	require.NoError(t, err)
	require.Equal(t, memCfg, cfg)
	require.Equal(t, mem.Tensors(), src.Tensors())
	require.Equal(t, "llama2.c "+path, src.String())
}

// TestLlama2CMalformed: a bad header or a file of the wrong size is an error naming the
// file and what is wrong, never a panic.
func TestLlama2CMalformed(t *testing.T) {
	good := stories260k.Checkpoint
	header := func(field int, v int32) []byte {
		b := slices.Clone(good)
		binary.LittleEndian.PutUint32(b[4*field:], uint32(v))
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "0 bytes: shorter than the 28-byte header"},
		{"truncated", good[:len(good)-4], "1056536 bytes, but a checkpoint of dim 64, hidden_dim 172, 5 layers, 8 heads, 4 KV heads, vocab 512 (shared classifier true) and seq_len 512 takes 1056540"},
		{"trailing bytes", append(slices.Clone(good), 0, 0, 0, 0), "1056544 bytes"},
		{"unshared classifier missing", header(5, -512), "(shared classifier false)"},
		{"zero layers", header(2, 0), "header field n_layers is 0"},
		{"negative dim", header(0, -64), "header field dim is -64"},
		{"odd head size", header(3, 64), "dim 64 over 64 heads: want an even head size"},
		{"heads over kv heads", header(4, 3), "8 heads do not group over 3 KV heads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Llama2CFromBytes("bad.bin", tc.data)
			require.ErrorContains(t, err, "llama2.c bad.bin: ")
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// FuzzLlama2C: any bytes load or fail with an error; what loads reads every tensor.
func FuzzLlama2C(f *testing.F) {
	f.Add(stories260k.Checkpoint[:64])
	small := make([]byte, 28)
	for i, v := range []int32{2, 2, 1, 1, 1, 3, 1} {
		binary.LittleEndian.PutUint32(small[4*i:], uint32(v))
	}
	f.Add(small)
	f.Fuzz(func(t *testing.T, data []byte) {
		src, _, err := Llama2CFromBytes("fuzz.bin", data)
		if err != nil {
			return
		}
		defer src.Close()
		for _, info := range src.Tensors() {
			_, err := format.ReadTensor(src, info.Name)
			require.NoError(t, err, info.Name)
		}
	})
}
