package shmring

// FirstSlotWord is where slot 0's sequence word sits, for tests that corrupt it.
func FirstSlotWord(c Config) int { return c.firstSlot() }
