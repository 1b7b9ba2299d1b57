// Package fused owns the fused collectives: all-reduce + residual add + RMSNorm (+ weight) in
// one pass over the reduced rows, one variant per all-reduce algorithm, built on comm's
// registered buffers and barriers. Data enters as a rank's partial output and residual on
// device buffers and leaves as the new residual and the normalized activations.
package fused
