import { Module } from '@nestjs/common';
import { GroupsModule } from '../groups/groups.module.js';
import { ProjectionsModule } from '../projections/projections.module.js';
import { DashboardService } from './dashboard.service.js';
import { UiController } from './ui.controller.js';

/** The `/ui` dashboard and its data routes. */
@Module({
  imports: [GroupsModule, ProjectionsModule],
  controllers: [UiController],
  providers: [DashboardService],
})
export class UiModule {}
