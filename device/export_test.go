package device

// SpinRounds exposes spinRounds to the tests: how often a waiter checks before it sleeps.
const SpinRounds = spinRounds
