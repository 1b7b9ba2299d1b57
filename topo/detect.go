package topo

import "strings"

// Auto is the spec that asks Detect to read the topology from NVML.
const Auto = "auto"

// Detect returns the node's topology. With spec "" or Auto it asks NVML and, when NVML
// cannot answer, returns the simulated nvswitch topology of n GPUs whose Source (and Note)
// says why in one line. Any other spec names a simulated topology (see Simulated) and NVML
// is not consulted: the name is the caller's explicit choice.
func Detect(spec string, n int) (Topology, error) {
	if err := checkGPUs(n); err != nil {
		return Topology{}, err
	}
	if s := strings.ToLower(strings.TrimSpace(spec)); s != "" && s != Auto {
		return Simulated(spec, n)
	}
	t, err := fromDriver()
	if err == nil {
		return t, nil
	}
	sim, serr := Simulated("nvswitch", n)
	if serr != nil {
		return Topology{}, serr
	}
	sim.Source = "simulated: " + err.Error()
	return sim, nil
}
