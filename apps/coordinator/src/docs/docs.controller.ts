import { Controller, Get, Inject } from '@nestjs/common';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { Public } from '../http/roles.decorator.js';
import { buildOpenApiDocument } from './openapi-document.js';

/** Serves the OpenAPI document (no token needed). */
@Controller('docs')
@Public()
export class DocsController {
  private readonly document: Record<string, unknown>;

  constructor(@Inject(COORDINATOR_CONFIG) config: CoordinatorConfig) {
    this.document = buildOpenApiDocument(config.maxShards);
  }

  @Get()
  document_(): Record<string, unknown> {
    return this.document;
  }

  @Get('openapi.json')
  openapi(): Record<string, unknown> {
    return this.document;
  }
}
