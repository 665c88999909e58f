/** Injection token of the producer's {@link ProducerConfig}. */
export const PRODUCER_CONFIG = 'EXAMPLE_PRODUCER:CONFIG';
