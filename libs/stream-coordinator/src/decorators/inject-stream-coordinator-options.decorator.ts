import { Inject } from '@nestjs/common';
import { STREAM_COORDINATOR_OPTIONS } from '../constants/stream-coordinator.constants.js';

/**
 * Injects the resolved module options (`ResolvedStreamCoordinatorOptions`).
 */
export const InjectStreamCoordinatorOptions = (): PropertyDecorator & ParameterDecorator =>
  Inject(STREAM_COORDINATOR_OPTIONS);
