// A quick "does this DTO instance pass?" check in front of class-validator's validateSync, built
// once per DTO class from class-validator's own metadata and run with class-validator's own
// constraint instances. A body that passes skips validateSync; any other body (or one this check
// cannot decide) goes through validateSync as before, so every 400 is class-validator's, byte for
// byte. The check may only say "passes" where validateSync would find no error: it walks the same
// steps (ValidationExecutor.execute/performValidations under validation.ts's options:
// forbidUnknownValues false, no whitelist, no groups, no skip* options) and gives up (null) on
// anything it does not model: async constraints, validateIf, promise validation, Set/Map values.
//
// Why: validateSync looks the class's metadata up again on every call (a scan of every class with
// rules, filters and a grouping) and builds a ValidationError for each of the DTO's properties,
// sent or not; CompletionRequestDto has ~90. This check costs a few microseconds of the ~20 that
// took per body (docs/perf/http-overhead.md).

import { getMetadataStorage, ValidationTypes, type ValidationArguments, type ValidatorConstraintInterface } from 'class-validator';
import type { ValidationMetadata } from 'class-validator/types/metadata/ValidationMetadata';

/** One rule run on a property's value: the constraint's instance, and the arguments it gets. */
interface Rule {
  metadata: ValidationMetadata;
  validator: ValidatorConstraintInterface;
}

/** What class-validator does with one property, in its order. */
interface PropertyPlan {
  name: string;
  /** ValidateIf/IsOptional conditions: any false, and the property is not validated. */
  conditions: ValidationMetadata[];
  /** IsDefined rules, then the other constraint rules. */
  rules: Rule[];
  nested: ValidationMetadata[];
}

/** Thrown (and caught below) where the check cannot say what validateSync would. */
class Undecided extends Error {}

/** Plans per DTO class; null where the class uses something the check does not model. */
const plans = new Map<unknown, PropertyPlan[] | null>();

function compile(target: new () => object): PropertyPlan[] | null {
  const storage = getMetadataStorage();
  // The same lookup ValidationExecutor.execute makes (always false, strictGroups false, no groups).
  const metadatas = storage.getTargetValidationMetadatas(target, undefined as unknown as string, false, false, undefined);
  const grouped = storage.groupByPropertyName(metadatas);
  const out: PropertyPlan[] = [];
  for (const name of Object.keys(grouped)) {
    const plan: PropertyPlan = { name, conditions: [], rules: [], nested: [] };
    const defined: Rule[] = [];
    const custom: Rule[] = [];
    for (const metadata of grouped[name]) {
      if (metadata.validateIf) return null;
      switch (metadata.type) {
        case ValidationTypes.CONDITIONAL_VALIDATION:
          plan.conditions.push(metadata);
          break;
        case ValidationTypes.NESTED_VALIDATION:
          plan.nested.push(metadata);
          break;
        case ValidationTypes.WHITELIST:
          break;
        case ValidationTypes.IS_DEFINED:
        case ValidationTypes.CUSTOM_VALIDATION: {
          const list = metadata.type === ValidationTypes.IS_DEFINED ? defined : custom;
          for (const constraint of storage.getTargetValidatorConstraints(metadata.constraintCls)) {
            if (constraint.async) return null;
            list.push({ metadata, validator: constraint.instance });
          }
          break;
        }
        default:
          return null;
      }
    }
    plan.rules = [...defined, ...custom];
    out.push(plan);
  }
  return out;
}

function planOf(target: unknown): PropertyPlan[] {
  if (typeof target !== 'function') throw new Undecided();
  let plan = plans.get(target);
  if (plan === undefined) {
    plan = compile(target as new () => object);
    plans.set(target, plan);
  }
  if (plan === null) throw new Undecided();
  return plan;
}

function result(value: unknown): boolean {
  if (value instanceof Promise) throw new Undecided();
  return Boolean(value);
}

function rulePasses(object: object, value: unknown, { metadata, validator }: Rule): boolean {
  const args: ValidationArguments = {
    targetName: object.constructor ? object.constructor.name : (undefined as unknown as string),
    property: metadata.propertyName,
    object,
    value,
    constraints: metadata.constraints,
  };
  if (value instanceof Set || value instanceof Map) throw new Undecided();
  if (!metadata.each || !Array.isArray(value)) return result(validator.validate(value, args));
  let all = true;
  for (const item of value as unknown[]) all = result(validator.validate(item, args)) && all;
  return all;
}

function nestedPasses(value: unknown, nested: ValidationMetadata[]): boolean {
  if (value === undefined) return true;
  for (let i = 0; i < nested.length; i++) {
    if (value instanceof Set || value instanceof Map) throw new Undecided();
    if (Array.isArray(value)) {
      for (const item of value as unknown[]) if (!nestedPasses(item, nested)) return false;
    } else if (value instanceof Object) {
      if (!objectPasses(value)) return false;
    } else {
      return false;
    }
  }
  return true;
}

function objectPasses(object: object): boolean {
  for (const plan of planOf(object.constructor)) {
    const value = (object as Record<string, unknown>)[plan.name];
    if (value instanceof Promise) throw new Undecided();
    let validate = true;
    for (const condition of plan.conditions) validate = Boolean((condition.constraints[0] as (o: object, v: unknown) => unknown)(object, value)) && validate;
    if (!validate) continue;
    for (const rule of plan.rules) if (!rulePasses(object, value, rule)) return false;
    if (plan.nested.length > 0 && !nestedPasses(value, plan.nested)) return false;
  }
  return true;
}

/**
 * true: validateSync(instance, { forbidUnknownValues: false, whitelist: false }) finds no error.
 * false: it finds one. null: run it to know.
 */
export function passesValidation(instance: object): boolean | null {
  try {
    return objectPasses(instance);
  } catch (err) {
    if (err instanceof Undecided) return null;
    throw err;
  }
}
