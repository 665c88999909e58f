import { SetMetadata } from '@nestjs/common';

/** Roles of the coordinator API (docs/protocol.md §2.2). */
export type ApiRole = 'member' | 'admin';

/** Metadata key of {@link RequireRole}. */
export const REQUIRED_ROLE = 'STREAM_COORDINATOR_SERVER:REQUIRED_ROLE';

/** Marks the role a route needs; routes without it are public (health, metrics, docs). */
export const RequireRole = (role: ApiRole): MethodDecorator & ClassDecorator =>
  SetMetadata(REQUIRED_ROLE, role);
