import { Controller, Get, Header, Inject, Param } from '@nestjs/common';
import { groupIdParam } from '../http/path-params.js';
import { Public, RequireRole } from '../http/roles.decorator.js';
import type { GroupDashboard } from './dashboard-view.js';
import { DashboardService, type DashboardOverview } from './dashboard.service.js';
import { DASHBOARD_CSP, DASHBOARD_HTML } from './dashboard.page.js';

/**
 * The dashboard: `GET /ui` serves the page (a static shell, no data, no token needed), whose
 * script polls `GET /ui/api/overview` and `GET /ui/api/groups/{groupId}` with a viewer token (COORDINATOR_VIEWER_TOKEN; member and admin tokens work too).
 */
@Controller('ui')
export class UiController {
  constructor(@Inject(DashboardService) private readonly dashboard: DashboardService) {}

  @Get()
  @Public()
  @Header('Content-Type', 'text/html; charset=utf-8')
  @Header('Cache-Control', 'no-cache')
  @Header('Content-Security-Policy', DASHBOARD_CSP)
  @Header('X-Content-Type-Options', 'nosniff')
  page(): string {
    return DASHBOARD_HTML;
  }

  @Get('api/overview')
  @RequireRole('viewer')
  @Header('Cache-Control', 'no-store')
  overview(): Promise<DashboardOverview> {
    return this.dashboard.overview();
  }

  @Get('api/groups/:groupId')
  @RequireRole('viewer')
  @Header('Cache-Control', 'no-store')
  group(@Param('groupId') groupId: string): Promise<GroupDashboard> {
    return this.dashboard.group(groupIdParam(groupId));
  }
}
