/** Placeholder: replaced by the Redis discovery of the test support helpers. */
export default function setup(): void {}
