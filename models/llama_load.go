package models

import (
	"fmt"

	"github.com/tpslice/tpslice/device"
	"github.com/tpslice/tpslice/dtype"
	"github.com/tpslice/tpslice/layers"
	"github.com/tpslice/tpslice/models/format"
	"github.com/tpslice/tpslice/quant"
)

// newLlamaRank reads rank r's shard of every weight and allocates its cache and activations.
func newLlamaRank(m *Llama, r int, src format.Source) (*llamaRank, error) {
	cfg, p := m.cfg, m.plan
	rk := &llamaRank{m: m, rank: r, dev: m.group.Device(r), overlapEvents: newOverlapEvents()}
	rk.maxBlocks = maxBlocks(p.World, rk.dev.NumSMs())
	hd := cfg.HeadDim
	h0, h1 := p.QHeads(r)
	k0, k1 := p.KVHeads(r)
	f0, f1 := p.FFN(r)
	v0, v1 := p.VocabRows(r)
	v1 = min(v1, cfg.Vocab)
	if v1 <= v0 {
		return nil, fmt.Errorf("rank %d holds no vocabulary rows (vocab %d over %d ranks)", r, cfg.Vocab, p.World)
	}
	rk.v0 = v0
	var err error
	matrix := func(name string, rows func(format.TensorInfo) format.Region) layers.Matrix {
		if err != nil {
			return layers.Matrix{}
		}
		var mat layers.Matrix
		mat, _, err = rk.loadMatrix(src, name, rows)
		return mat
	}
	rowsOf := func(a, b int) func(format.TensorInfo) format.Region {
		return func(t format.TensorInfo) format.Region { return t.RowRange(a, b) }
	}
	column := func(l int, kind string, r0, r1 int) columnLinear {
		if err != nil {
			return columnLinear{}
		}
		var c columnLinear
		c, err = rk.loadColumn(src, l, kind, r0, r1)
		return c
	}
	row := func(l int, kind string, c0, c1 int) rowLinear {
		if err != nil {
			return rowLinear{}
		}
		var r rowLinear
		r, err = rk.loadRow(src, l, kind, c0, c1)
		return r
	}
	for l := range cfg.Layers {
		var ly llamaLayer
		ly.q = column(l, AttnQ, h0*hd, h1*hd)
		ly.k = column(l, AttnK, k0*hd, k1*hd)
		ly.v = column(l, AttnV, k0*hd, k1*hd)
		ly.o = row(l, AttnOutput, h0*hd, h1*hd)
		ly.gate = column(l, FFNGate, f0, f1)
		ly.up = column(l, FFNUp, f0, f1)
		ly.down = row(l, FFNDown, f0, f1)
		if cfg.QKNorm && err == nil { // over one head: every rank holds all of them
			ly.qNorm, err = rk.loadVector(src, LayerTensorName(l, AttnQNorm))
			if err == nil {
				ly.kNorm, err = rk.loadVector(src, LayerTensorName(l, AttnKNorm))
			}
		}
		if err == nil {
			ly.attnNorm, err = rk.loadVector(src, LayerTensorName(l, AttnNorm))
		}
		if err == nil {
			ly.ffnNorm, err = rk.loadVector(src, LayerTensorName(l, FFNNorm))
		}
		rk.layers = append(rk.layers, ly)
	}
	rk.embed = matrix(TokenEmbd, rowsOf(v0, v1))
	head := Output
	if cfg.TiedEmbeddings {
		head = TokenEmbd
	}
	rk.head = matrix(head, rowsOf(v0, v1))
	if err == nil {
		rk.norm, err = rk.loadVector(src, OutputNorm)
	}
	if err == nil {
		err = rk.allocState()
	}
	if err != nil {
		rk.free()
		return nil, err
	}
	return rk, nil
}

// loadColumn reads rows [r0, r1) of layer l's projection kind, and of its bias where the
// architecture has one (Arch.QKVBias: q, k and v).
func (rk *llamaRank) loadColumn(src format.Source, l int, kind string, r0, r1 int) (columnLinear, error) {
	w, _, err := rk.loadMatrix(src, LayerTensorName(l, kind), func(t format.TensorInfo) format.Region { return t.RowRange(r0, r1) })
	if err != nil || !rk.m.cfg.QKVBias || !isBiased(kind) {
		return columnLinear{w: w}, err
	}
	bias, err := rk.loadVectorPart(src, LayerBiasName(l, kind), r0, r1)
	return columnLinear{w: w, bias: bias}, err
}

// loadRow reads columns [c0, c1) of layer l's projection kind (whole blocks of a quantized
// type, see loadMatrix).
func (rk *llamaRank) loadRow(src format.Source, l int, kind string, c0, c1 int) (rowLinear, error) {
	w, lead, err := rk.loadMatrix(src, LayerTensorName(l, kind), func(t format.TensorInfo) format.Region { return t.ColRange(c0, c1) })
	return rowLinear{w: w, lead: lead}, err
}

// loadMatrix reads a region of a 2-D tensor into a new device buffer on the rank's device
// and wraps it as a layers.Matrix, in the configured weight dtype or the stored one, rows
// of a quantized type repacked into package quant's device layout. A row-parallel shard
// (columns [c0, c1) of every row) whose ends fall inside blocks of a quantized type (o_proj
// where heads are narrower than blocks, down where the FFN has fewer blocks than ranks or
// does not tile into them; the plan splits it in whole blocks otherwise) is
// loaded as the whole blocks its columns touch: lead is the column of the matrix where the
// shard's own columns begin, and its input is quantized into rows of the matrix's width
// with zeros around it (quant.QuantizeActsAt), which take no part in any sum. Nothing is
// converted, so every rank holds exactly the weights of the unsharded model.
func (rk *llamaRank) loadMatrix(src format.Source, name string, region func(format.TensorInfo) format.Region) (layers.Matrix, int, error) {
	info, ok := src.Tensor(name)
	if !ok {
		return layers.Matrix{}, 0, fmt.Errorf("%v: no tensor %s", src, name)
	}
	reg := region(info)
	t := rk.m.opt.WeightDType
	if t == 0 {
		t = info.DType
	}
	// A padded shard (the last FFN columns where the ranks do not divide the width) reaches
	// past the tensor: only the part inside it is read, and the rest of the matrix is zeros.
	nr, nc := info.Dims()
	stored := format.Region{Row0: reg.Row0, Row1: min(reg.Row1, nr), Col0: reg.Col0, Col1: min(reg.Col1, nc)}
	lead, bs := 0, t.BlockSize()
	if stored.Col0%bs != 0 || stored.Col1%bs != 0 {
		whole := format.Region{Row0: stored.Row0, Row1: stored.Row1, Col0: stored.Col0 / bs * bs, Col1: (stored.Col1 + bs - 1) / bs * bs}
		rk.notes = append(rk.notes, shardNote{tensor: name, dtype: t, block: bs, cols: stored.Col1 - stored.Col0, extra: whole.Len() - stored.Len(), shard: stored.Len()})
		stored, lead = whole, stored.Col0-whole.Col0
	}
	rows, cols := reg.Row1-reg.Row0, (lead+reg.Col1-reg.Col0+bs-1)/bs*bs
	if rk.m.opt.ShapeOnly {
		rk.weightBytes += int64(quant.PackedBytes(t, rows, cols))
		return layers.Matrix{DType: t, Rows: rows, Cols: cols}, lead, nil
	}
	buf, err := rk.dev.Alloc(t, quant.PackedRows(t, rows)*cols)
	if err != nil {
		return layers.Matrix{}, 0, fmt.Errorf("%s %v: %w", name, reg, err)
	}
	rk.bufs = append(rk.bufs, buf)
	rk.weightBytes += int64(buf.Bytes())
	mat := layers.Matrix{DType: t, Rows: rows, Cols: cols, Data: buf.Bytes8()}
	if stored != reg {
		return mat, lead, rk.readPadded(src, name, stored, t, mat)
	}
	if !t.Quantized() {
		return mat, lead, src.Read(name, reg, format.BufferDest(buf))
	}
	blocks := make([]byte, rows*t.Bytes(cols))
	if err := src.Read(name, reg, format.BlockDest(t, blocks)); err != nil {
		return layers.Matrix{}, 0, err
	}
	if err := quant.Pack(t, buf.Bytes8(), blocks, rows, cols); err != nil {
		return layers.Matrix{}, 0, fmt.Errorf("%s %v: %w", name, reg, err)
	}
	return mat, lead, nil
}

// readPadded reads region stored of tensor name into the first rows and columns of the
// zeroed matrix mat, larger than it: each stored row's values (in GGML's row layout) are
// followed by zeros up to mat's width, the rows past the stored ones stay zero, and block
// types are then packed into package quant's layout. Zero weights (and zero block scales)
// contribute exactly nothing to any output.
func (rk *llamaRank) readPadded(src format.Source, name string, stored format.Region, t dtype.DType, mat layers.Matrix) error {
	rows, cols := stored.Row1-stored.Row0, stored.Col1-stored.Col0
	if rows <= 0 || cols <= 0 {
		return nil // the shard is all padding
	}
	stage, err := rk.dev.Alloc(t, rows*cols)
	if err != nil {
		return fmt.Errorf("%s %v: %w", name, stored, err)
	}
	defer stage.Free()
	if err := src.Read(name, stored, format.BufferDest(stage)); err != nil {
		return err
	}
	staged := stage.Bytes8()
	rowBytes, width := t.Bytes(cols), t.Bytes(mat.Cols)
	padded := mat.Data
	if t.Quantized() {
		padded = make([]byte, rows*width)
	}
	for r := range rows {
		copy(padded[r*width:], staged[r*rowBytes:(r+1)*rowBytes])
	}
	if !t.Quantized() {
		return nil
	}
	n := quant.PackedBytes(t, rows, mat.Cols)
	if err := quant.Pack(t, mat.Data[:n], padded, rows, mat.Cols); err != nil {
		return fmt.Errorf("%s %v: %w", name, stored, err)
	}
	return nil
}

// loadVector reads a whole norm weight as f32 (every rank holds all of it).
func (rk *llamaRank) loadVector(src format.Source, name string) (*device.Buffer, error) {
	info, ok := src.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("%v: no tensor %s", src, name)
	}
	return rk.loadVectorPart(src, name, 0, info.Elements())
}

// loadVectorPart reads elements [c0, c1) of a vector (a norm weight or a bias) as f32.
func (rk *llamaRank) loadVectorPart(src format.Source, name string, c0, c1 int) (*device.Buffer, error) {
	info, ok := src.Tensor(name)
	if !ok {
		return nil, fmt.Errorf("%v: no tensor %s", src, name)
	}
	buf, err := rk.dev.Alloc(dtype.F32, c1-c0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rk.bufs = append(rk.bufs, buf)
	rk.weightBytes += int64(buf.Bytes())
	if rk.m.opt.ShapeOnly {
		return buf, nil
	}
	return buf, src.Read(name, info.ColRange(c0, c1), format.BufferDest(buf))
}
