import { type CanActivate, type ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { CoordinatorError } from '../core/coordinator-error.js';
import { type ApiRole, REQUIRED_ROLE } from './roles.decorator.js';
import { TokenMatcher } from './token-matcher.js';

/**
 * Bearer-token authentication with two roles (docs/protocol.md §2.2): a missing or unknown token is
 * 401 UNAUTHENTICATED, a member token on an admin route is 403 FORBIDDEN. Admin tokens may call
 * member routes. With `COORDINATOR_AUTH=none` every caller is admin (local development only).
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly members: TokenMatcher;
  private readonly admins: TokenMatcher;

  constructor(
    private readonly reflector: Reflector,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {
    this.members = new TokenMatcher(config.memberTokens);
    this.admins = new TokenMatcher(config.adminTokens);
  }

  canActivate(context: ExecutionContext): boolean {
    const role = this.reflector.getAllAndOverride<ApiRole | undefined>(REQUIRED_ROLE, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (role === undefined || this.config.auth === 'none') return true;
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer ([^\s]+)$/i.exec(header.trim()) : null;
    if (!match?.[1]) {
      throw new CoordinatorError(
        'UNAUTHENTICATED',
        'missing bearer token: send "Authorization: Bearer <token>"',
      );
    }
    // one hash per request, checked against both roles (constant time either way)
    const presented = TokenMatcher.digest(match[1]);
    const isAdmin = this.admins.matchesDigest(presented);
    const isMember = this.members.matchesDigest(presented);
    if (!isAdmin && !isMember)
      throw new CoordinatorError('UNAUTHENTICATED', 'the bearer token is not valid');
    if (role === 'admin' && !isAdmin) {
      throw new CoordinatorError(
        'FORBIDDEN',
        'this route needs an admin token (COORDINATOR_ADMIN_TOKEN)',
      );
    }
    return true;
  }
}
