// CLI commands of the search stage (filled in by that stage's work).
import type { Command } from './context.js';

export const commands: Record<string, Command> = {};
