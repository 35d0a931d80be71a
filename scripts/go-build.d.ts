export const GOPATH: string;
export function debianGoPackage(importPath: string): string;
export function goBuild(sourceDir: string, binary: string): string;
